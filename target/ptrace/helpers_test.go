package ptrace

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
)

// recorder collects a Target's events for a test.
type recorder struct {
	mu     sync.Mutex
	cond   *sync.Cond
	events []target.Event
}

func newRecorder(tg *target.Target) *recorder {
	r := &recorder{}
	r.cond = sync.NewCond(&r.mu)
	tg.AddListener(func(e target.Event) {
		r.mu.Lock()
		r.events = append(r.events, e)
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	return r
}

// wait returns the first event from index *from on that matches, advancing
// *from past it; it fails the test after a timeout.
func (r *recorder) wait(t testing.TB, from *int, what string, match func(target.Event) bool) target.Event {
	t.Helper()
	return r.waitFor(t, from, what, 20*time.Second, match)
}

// waitFor is wait with its own timeout, for waits on a whole run (100k
// displaced steps take seconds on a quiet machine, far longer on a loaded one).
func (r *recorder) waitFor(t testing.TB, from *int, what string, limit time.Duration, match func(target.Event) bool) target.Event {
	t.Helper()
	deadline := time.Now().Add(limit)
	timer := time.AfterFunc(limit, func() { r.mu.Lock(); r.cond.Broadcast(); r.mu.Unlock() })
	defer timer.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		for i := *from; i < len(r.events); i++ {
			if match(r.events[i]) {
				*from = i + 1
				return r.events[i]
			}
		}
		if time.Now().After(deadline) {
			var seen []string
			for _, e := range r.events[*from:] {
				seen = append(seen, describe(e))
			}
			t.Fatalf("timed out waiting for %s; events since: %s", what, strings.Join(seen, ", "))
		}
		r.cond.Wait()
	}
}

func (r *recorder) all() []target.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]target.Event(nil), r.events...)
}

func describe(e target.Event) string {
	s := e.Kind.String() + " " + string(e.Context.ID())
	if e.Reason != nil {
		s += fmt.Sprintf(" (%s sig %d pc 0x%x)", e.Reason.Kind, e.Reason.Signal, e.PC)
	}
	if e.Exit != nil {
		s += " (" + e.Exit.String() + ")"
	}
	return s
}

func isStop(ctx *target.Context) func(target.Event) bool {
	return func(e target.Event) bool {
		return e.Kind == target.EventStopped && (ctx == nil || e.Context == ctx || e.Context.Parent() == ctx)
	}
}

func isExit(ctx *target.Context) func(target.Event) bool {
	return func(e target.Event) bool { return e.Kind == target.EventExited && e.Context == ctx }
}

func newTarget(t testing.TB) (*target.Target, *recorder) {
	t.Helper()
	tg, err := New()
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder(tg)
	t.Cleanup(func() { tg.Close() })
	return tg, r
}

func build(t testing.TB, src string) string {
	t.Helper()
	return testprog.Build(t, testprog.Spec{Sources: []string{src}, Flags: []string{"-O2"}})
}

func launch(t testing.TB, tg *target.Target, path string, args ...string) *target.Context {
	t.Helper()
	p, _, err := tg.Launch(target.LaunchOptions{Path: path, Argv: append([]string{path}, args...), StopAtEntry: true, Stdio: target.StdioNull})
	if err != nil {
		t.Fatal(err)
	}
	// Some test programs loop forever: never leave one running after its test
	// (this runs before the target is closed, so the process is still sonde's).
	testprog.KillAtCleanup(t, p.PID())
	return p
}

// symbol returns the run-time address of a symbol of the program running as
// proc (PIE: the load base comes from the memory map).
func symbol(t testing.TB, proc *target.Context, path, name string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var base uint64
	if f.Type == elf.ET_DYN {
		m, err := proc.MemoryMap()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range m {
			if r.FileName == path && r.Offset == 0 {
				base = r.Addr
				break
			}
		}
		if base == 0 {
			t.Fatalf("%s is not mapped in %s", path, proc.ID())
		}
	}
	for _, s := range syms {
		if s.Name == name {
			return base + s.Value
		}
	}
	t.Fatalf("no symbol %s in %s", name, path)
	return 0
}

// fileBytes returns the bytes of the executable file at a symbol's address.
func fileBytes(t testing.TB, path, name string, n int) []byte {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	for _, s := range syms {
		if s.Name != name {
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && s.Value >= p.Vaddr && s.Value+uint64(n) <= p.Vaddr+p.Filesz {
				b := make([]byte, n)
				if _, err := p.ReadAt(b, int64(s.Value-p.Vaddr)); err != nil {
					t.Fatal(err)
				}
				return b
			}
		}
	}
	t.Fatalf("no bytes for %s", name)
	return nil
}

func mainThread(t testing.TB, proc *target.Context) *target.Context {
	t.Helper()
	for _, th := range proc.Children() {
		if th.TID() == proc.PID() {
			return th
		}
	}
	t.Fatalf("%s has no main thread", proc.ID())
	return nil
}

// startUntraced starts a program with os/exec (not under sonde) and waits for
// its "ready" line.
func startUntraced(t testing.TB, path string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(path, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := make([]byte, 64)
	n, err := out.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), "ready") {
		t.Fatalf("program did not start: %q %v", buf[:n], err)
	}
	return cmd
}

func procState(t testing.TB, pid int) procStatus {
	t.Helper()
	st, err := readStatus(pid)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitState polls /proc until pid's state letter is one of want.
func waitState(t testing.TB, pid int, want string) procStatus {
	t.Helper()
	var st procStatus
	for i := 0; i < 400; i++ {
		st = procState(t, pid)
		if strings.IndexByte(want, st.State) >= 0 {
			return st
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("process %d state %c, want one of %q", pid, st.State, want)
	return st
}

func pidString(pid int) string { return strconv.Itoa(pid) }

var _ = os.Getpid
