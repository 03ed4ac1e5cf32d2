package session

import (
	"testing"
	"time"

	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/target"
)

// TestModulesReadAgainOnlyAfterReportedChange: Modules reads a process's
// list once and again only after the process reports a change of its
// mappings; a scan made after the report, before the event's listeners
// heard of it, stays current. (The first stop of `sonde dap` read libc's
// and the executable's modules a third time: the dynamic linker's hook
// reported the libraries, the front end read the list at once for its
// module events, and the session's listener, hearing of the report
// afterwards, threw that list away.)
func TestModulesReadAgainOnlyAfterReportedChange(t *testing.T) {
	_, pid := deepTarget(t)
	s := liveSession(t, pid)
	th := mainThread(t, s)
	proc := th.Process()
	heard := make(chan struct{}, 4)
	s.Target().AddListener(func(e target.Event) {
		if e.Kind == target.EventMemoryMapChanged {
			heard <- struct{}{}
		}
	})
	read := func() modules.List {
		t.Helper()
		m, err := s.Modules(th)
		if err != nil || len(m) == 0 {
			t.Fatalf("Modules: %d modules, %v", len(m), err)
		}
		return m
	}
	m1 := read()
	if m2 := read(); !sameList(m1, m2) {
		t.Fatal("the list was read again with no change reported")
	}
	s.Target().MemoryMapChanged(proc)
	m3 := read()
	if sameList(m1, m3) {
		t.Fatal("a reported change did not make Modules read the list again")
	}
	select {
	case <-heard:
	case <-time.After(30 * time.Second):
		t.Fatal("no listener heard the change")
	}
	if m4 := read(); !sameList(m3, m4) {
		t.Fatal("the list read after the change was reported was read again once listeners heard of it")
	}
}
