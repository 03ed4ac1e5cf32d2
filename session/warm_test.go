package session

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestPrepareSymbolsOpensTheStopsFiles: PrepareSymbols, given a running
// program's executable, opens the very files its stack's modules are (by
// the path the kernel gives them), so that the first stop's lookups find
// them read: symbolizing the main thread's stack afterwards opens nothing
// new. The system libraries no stack runs through unless it stops in them
// (the dynamic linker here) are left to the lookups.
func TestPrepareSymbolsOpensTheStopsFiles(t *testing.T) {
	path, pid := deepTarget(t)
	s := liveSession(t, pid)
	s.PrepareSymbols(path, nil)
	s.mu.Lock()
	prepared := len(s.files)
	s.mu.Unlock()
	st, err := s.Stack(mainThread(t, s), StackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inLibc := false
	for i := 0; i < st.Len(); i++ {
		if m := st.Frame(i).mod; m != nil && holdsStartCode(m.Path) {
			inLibc = true
		}
	}
	if !inLibc {
		t.Fatalf("no frame in the C library among %d frames", st.Len())
	}
	s.mu.Lock()
	n := len(s.files)
	s.mu.Unlock()
	if n != prepared {
		t.Errorf("the stack opened %d files PrepareSymbols had not", n-prepared)
	}
	mods, err := s.Modules(mainThread(t, s))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		if strings.Contains(filepath.Base(m.Path), "ld-linux") {
			s.mu.Lock()
			for k := range s.files {
				if k.path == m.Path {
					t.Errorf("the dynamic linker %s was read ahead", m.Path)
				}
			}
			s.mu.Unlock()
		}
	}
	t.Logf("%d files prepared, %d frames", prepared, st.Len())
}

// TestPrepareOrder: the C library first, then the executable, then the
// program's own libraries; the other system libraries not at all.
func TestPrepareOrder(t *testing.T) {
	libc := "/usr/lib/x86_64-linux-gnu/libc.so.6"
	got := prepareOrder([]string{"/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30",
		"/opt/app/lib/libapp.so", "/usr/lib/x86_64-linux-gnu/libm.so.6", libc,
		"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/opt/app/bin/app"})
	want := []prepared{{path: libc}, {path: "/opt/app/bin/app", exe: true}, {path: "/opt/app/lib/libapp.so"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := prepareOrder(nil); got != nil {
		t.Fatalf("nothing to prepare: got %v", got)
	}
}

// TestNeededFilesMissingProgram: a program that is not there (or a bare
// name the launch will look up in PATH) prepares nothing.
func TestNeededFilesMissingProgram(t *testing.T) {
	if got := neededFiles("/nonexistent/program", nil); len(got) != 0 {
		t.Fatalf("got %v", got)
	}
}
