package session

import (
	"testing"
)

// TestPrepareProcessOpensLibcAndExe: PrepareProcess, given a live
// process, opens exactly its C library and its executable, as the very
// files the stack's modules are (by the paths the memory map gives them),
// so that a stack's lookups find them read: asking the session for those
// modules' files afterwards opens nothing new.
func TestPrepareProcessOpensLibcAndExe(t *testing.T) {
	_, pid := deepTarget(t)
	s := liveSession(t, pid)
	s.PrepareProcess(pid)
	s.mu.Lock()
	prepared := len(s.files)
	s.mu.Unlock()
	if prepared != 2 {
		t.Fatalf("%d files prepared, want 2 (libc and the executable)", prepared)
	}
	mods, err := s.Modules(mainThread(t, s))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, m := range mods {
		if m.VDSO || m.Path == "" || !(m.Main || isCLibrary(m.Path)) {
			continue
		}
		found++
		if _, err := s.file(m); err != nil {
			t.Fatalf("%s: %v", m.Path, err)
		}
		s.mu.Lock()
		n := len(s.files)
		s.mu.Unlock()
		if n != prepared {
			t.Errorf("module %s (%s) was not among the prepared files", m.Name, m.Path)
			prepared = n
		}
	}
	if found != 2 {
		t.Fatalf("found %d of libc and the executable among the modules %v", found, mods)
	}
}

// TestPrepareProcessGone: a process that is not there prepares nothing.
func TestPrepareProcessGone(t *testing.T) {
	s := &Session{files: map[fileKey]*file{}}
	s.PrepareProcess(1 << 30)
	if len(s.files) != 0 {
		t.Fatalf("%d files opened", len(s.files))
	}
}
