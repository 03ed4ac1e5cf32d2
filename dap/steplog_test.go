package dap

import (
	"strings"
	"testing"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestLogpointAtStepEnd: a log point on the line a next ends at logs
// there, as gdb's dprintf does (the thread then goes on over the
// breakpoint without a hit): add runs three times, its log line is
// printed three times, one of them for the stop a next made on it.
func TestLogpointAtStepEnd(t *testing.T) {
	prog := buildProg(t)
	c := newClient(t)
	c.launch(prog, nil)
	src := testprog.Source("dap_prog.c")
	bps := c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": src}, "breakpoints": []map[string]any{
		{"line": markerLine(t, "dap_prog.c", "add"), "hitCondition": "== 2"},
		{"line": markerLine(t, "dap_prog.c", "add2"), "logMessage": "logged sum={sum}"},
	}}).(*godap.SetBreakpointsResponse).Body.Breakpoints
	if !bps[0].Verified || !bps[1].Verified {
		t.Fatalf("unverified: %+v", bps)
	}
	c.request("configurationDone", nil)
	st := c.stopped()
	c.request("next", map[string]any{"threadId": st.Body.ThreadId})
	st = c.stopped()
	frames := c.stack(st.Body.ThreadId)
	if frames[0].Line != markerLine(t, "dap_prog.c", "add2") {
		t.Fatalf("next stopped at line %d", frames[0].Line)
	}
	c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
	c.event("exited")
	c.event("terminated")
	console := c.output("console")
	if n := strings.Count(console, "logged sum="); n != 3 {
		t.Errorf("the log point logged %d times for add's 3 runs: %q", n, console)
	}
	c.request("disconnect", nil)
}
