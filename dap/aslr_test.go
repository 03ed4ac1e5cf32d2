package dap

import (
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
)

// TestLaunchDisablesASLR: a launched program runs without address
// randomisation unless disableASLR is false (lldb-dap's argument and
// default; gdb's disable-randomization): a PIE's function is at gdb's
// address in every run, so addresses in watches and memory views are
// those of other sessions and of gdb (found in the sixth real-program
// trial: lz4's pointers differed from gdb's at every stop).
func TestLaunchDisablesASLR(t *testing.T) {
	gdbtest.Need(t)
	prog := buildProg(t) // a PIE
	gdb := gdbPrints(t, prog, "dap_prog.c", markerLine(t, "dap_prog.c", "add"), []string{"print &add"})
	addrOf := func(extra map[string]any) string {
		c := newClient(t)
		c.launch(prog, extra)
		c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "add"}}})
		c.request("configurationDone", nil)
		st := c.stopped()
		frames := c.stack(st.Body.ThreadId)
		r := c.evaluate("&add", frames[0].Id, "watch").Body
		c.request("disconnect", nil)
		return "(" + r.Type + ") " + r.Result
	}
	if got := addrOf(nil); got != gdb[0] {
		t.Errorf("&add: sonde %q, gdb %q", got, gdb[0])
	}
	if got := addrOf(map[string]any{"disableASLR": false}); got == gdb[0] {
		t.Errorf("disableASLR false: &add is gdb's %q, as without randomisation", got)
	}
}
