package session

import (
	"strings"
	"testing"
)

// TestPrepareSymbolsOpensTheStopsFiles: PrepareSymbols, given a running
// program's executable, opens the very files its modules are (the
// executable and every library the process mapped, by the path the kernel
// gives them), so that the first stop's lookups find them read: asking
// the session for each module's file afterwards opens nothing new.
func TestPrepareSymbolsOpensTheStopsFiles(t *testing.T) {
	path, pid := deepTarget(t)
	s := liveSession(t, pid)
	s.PrepareSymbols(path, nil)
	s.mu.Lock()
	prepared := len(s.files)
	s.mu.Unlock()
	mods, err := s.Modules(mainThread(t, s))
	if err != nil {
		t.Fatal(err)
	}
	libs := 0
	for _, m := range mods {
		if m.VDSO || m.Path == "" {
			continue
		}
		if strings.Contains(m.Path, ".so") {
			libs++
		}
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
	if libs == 0 {
		t.Fatalf("no libraries among the modules %v", mods)
	}
	t.Logf("%d files prepared, %d libraries mapped", len(s.files), libs)
}

// TestNeededFilesMissingProgram: a program that is not there (or a bare
// name the launch will look up in PATH) prepares nothing.
func TestNeededFilesMissingProgram(t *testing.T) {
	if got := neededFiles("/nonexistent/program", nil); len(got) != 0 {
		t.Fatalf("got %v", got)
	}
}
