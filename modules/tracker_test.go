package modules

import (
	"bufio"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/ptrace"
)

// TestTrackerFollowsDlopen launches mod_dlopen stopped at its first
// instruction (before the dynamic linker ran), tracks it, and checks that the
// dlopen and the dlclose of the library are reported through the linker's
// hook, and that StopOnChange turns them into "Shared Library" stops.
func TestTrackerFollowsDlopen(t *testing.T) {
	lib := testprog.Build(t, testprog.Spec{Sources: []string{"mod_lib.c"}, Flags: []string{"-shared", "-fPIC", "-O2"}, Name: "libmodtest.so"})
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"mod_dlopen.c"}, Flags: []string{"-ldl"}})
	tg, err := ptrace.New()
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	var mu sync.Mutex
	var stops []target.Event
	stopped := make(chan struct{}, 16)
	tg.AddListener(func(e target.Event) {
		if e.Kind == target.EventStopped {
			mu.Lock()
			stops = append(stops, e)
			mu.Unlock()
			stopped <- struct{}{}
		}
	})
	proc, pio, err := tg.Launch(target.LaunchOptions{Path: prog, Argv: []string{prog, lib}, StopAtEntry: true, Stdio: target.StdioPipes})
	if err != nil {
		t.Fatal(err)
	}
	<-stopped // the entry stop

	var changes []Change
	tr, err := Track(proc, func(c Change) {
		mu.Lock()
		changes = append(changes, c)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.Modules().Interpreter() == nil {
		t.Fatalf("no dynamic linker among %v", tr.Modules())
	}
	tr.StopOnChange.Store(true)
	if err := proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	// Startup loads (libc...) stop us first; resume until the library shows up.
	out := bufio.NewReader(pio.Stdout)
	deadline := time.After(20 * time.Second)
	sawLib := false
	for !sawLib {
		select {
		case <-stopped:
		case <-deadline:
			t.Fatal("no stop reported the library's load")
		}
		mu.Lock()
		last := stops[len(stops)-1]
		for _, c := range changes {
			for _, m := range c.Added {
				sawLib = sawLib || m.Path == lib
			}
		}
		mu.Unlock()
		if last.Reason.Kind != target.ReasonSharedLibrary {
			t.Fatalf("stop reason %v, want a shared-library stop", last.Reason.Kind)
		}
		if !sawLib {
			if err := proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if tr.Modules().ForAddress(findModule(t, tr.Modules(), lib).Start) == nil {
		t.Fatal("tracked list lacks the loaded library")
	}
	// Run on without stops; the program says ready, then unloads on a line.
	tr.StopOnChange.Store(false)
	if err := proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	if line, err := out.ReadString('\n'); err != nil || !strings.HasPrefix(line, "ready") {
		t.Fatalf("program said %q %v", line, err)
	}
	if _, err := pio.Stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := out.ReadString('\n'); err != nil || line != "unloaded\n" {
		t.Fatalf("program said %q %v", line, err)
	}
	mu.Lock()
	removed := false
	for _, c := range changes {
		for _, m := range c.Removed {
			removed = removed || m.Path == lib
		}
	}
	mu.Unlock()
	if !removed {
		t.Fatalf("dlclose not reported: %+v", changes)
	}
	for _, m := range tr.Modules() {
		if m.Path == lib {
			t.Fatal("unloaded library still listed")
		}
	}
	pio.Stdin.Close()
}

func findModule(t *testing.T, l List, path string) *Module {
	for _, m := range l {
		if m.Path == path {
			return m
		}
	}
	t.Fatalf("no module %s in %v", path, l)
	return nil
}
