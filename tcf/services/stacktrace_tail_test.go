package services_test

import (
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestLiveTailCallFrameProps stops testdata/uw_tail (-O2) at leaf_block,
// reached through two tail calls (caller -> tail_a => tail_b => leaf_block):
// the StackTrace shows gdb's two tail-call frames between leaf_block and
// caller, marked TailCall, each at the address after its jump.
func TestLiveTailCallFrameProps(t *testing.T) {
	la := startLive(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"uw_tail.c"}, Flags: []string{"-O2"}, Name: "tcf_uw_tail"})
	_, thread := la.launchStopped(prog, []string{"chain"}, nil)
	la.ok("Breakpoints", "add", map[string]any{"ID": "leaf", "Location": "leaf_block"})
	if _, reason, _ := la.resume(thread, 0); reason != "Breakpoint" {
		t.Fatalf("stopped by %q, want the breakpoint", reason)
	}
	var e error
	ids := la.topFrames(thread, 4)
	var frames []struct {
		IP       uint64
		TailCall bool
	}
	la.decode("StackTrace", "getContext", []any{ids}, &frames, &e)
	if len(frames) != 4 {
		t.Fatalf("%d frames", len(frames))
	}
	for i, want := range []struct {
		fn   string
		tail bool
	}{{"leaf_block", false}, {"tail_b", true}, {"tail_a", true}, {"caller", false}} {
		pc := frames[i].IP
		if i > 0 {
			pc-- // callers are looked up before their return address
		}
		if got := la.funcAt(thread, pc); got != want.fn || frames[i].TailCall != want.tail {
			t.Errorf("frame %d: %s, TailCall %v; want %s, %v", i, got, frames[i].TailCall, want.fn, want.tail)
		}
	}
}
