package session

import (
	"strings"
	"sync"
	"testing"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/ptrace"
)

// TestNoDebugHintForTheVDSO: opening every module of a live process (what
// a lookup by name does, e.g. dap's evaluate of an unknown name) warns
// about no vDSO, whose debug file no package installs; the modules
// without DWARF still get their hint, once each. Found in `sonde dap`'s
// console on jsoncpp's test runner ("no debug information for [vdso];
// install its debug package").
func TestNoDebugHintForTheVDSO(t *testing.T) {
	_, pid := deepTarget(t)
	tg, err := ptrace.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	if _, err := tg.Attach(pid, target.AttachOptions{Stop: true}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var msgs []string
	s := New(tg, Options{Warn: func(msg string) { mu.Lock(); msgs = append(msgs, msg); mu.Unlock() }})
	mods, err := s.Modules(mainThread(t, s))
	if err != nil {
		t.Fatal(err)
	}
	vdso := false
	for _, m := range mods {
		vdso = vdso || m.VDSO
		s.file(m)
		s.file(m)
	}
	if !vdso {
		t.Skip("SKIP: the process maps no vDSO")
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		if strings.Contains(m, "vdso") {
			t.Errorf("a warning names the vDSO: %q", m)
		}
		if seen[m] {
			t.Errorf("warned twice: %q", m)
		}
		seen[m] = true
	}
	t.Logf("warnings: %q", msgs)
}
