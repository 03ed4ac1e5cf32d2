package dap

import (
	"regexp"
	"strings"
	"testing"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/testprog"
)

// launchStopped initializes, launches prog with args and returns once the
// initialized event came (breakpoints may be set then).
func (c *client) launch(prog string, extra map[string]any, args ...string) int {
	c.t.Helper()
	c.initialize()
	a := map[string]any{"program": prog, "args": args}
	for k, v := range extra {
		a[k] = v
	}
	c.request("launch", a)
	c.event("initialized")
	return c.event("process").(*godap.ProcessEvent).Body.SystemProcessId
}

// TestConditionsHitCountsLogPoints: a condition stops only where it holds,
// a hit condition from the Nth hit, a log point prints its {expressions}
// and never stops; hits that do not show send nothing.
func TestConditionsHitCountsLogPoints(t *testing.T) {
	prog := buildProg(t)
	c := newClient(t)
	c.launch(prog, nil)
	src := testprog.Source("dap_prog.c")
	bps := c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": src}, "breakpoints": []map[string]any{
		{"line": markerLine(t, "dap_prog.c", "add"), "condition": "a == 30"},
		{"line": markerLine(t, "dap_prog.c", "add2"), "logMessage": "sum {a}+{b}={sum} {{braces}}"},
		{"line": markerLine(t, "dap_prog.c", "return"), "hitCondition": "1"},
		{"line": markerLine(t, "dap_prog.c", "call"), "hitCondition": "3"},
	}}).(*godap.SetBreakpointsResponse).Body.Breakpoints
	for _, b := range bps {
		if !b.Verified {
			t.Fatalf("unverified: %+v", bps)
		}
	}
	c.request("configurationDone", nil)
	// The call line is hit once per iteration: the third hit (i == 2).
	st := c.stopped()
	if st.Body.Reason != "breakpoint" || st.Body.HitBreakpointIds[0] != bps[3].Id {
		t.Fatalf("first stop: %+v", st.Body)
	}
	frames := c.stack(st.Body.ThreadId)
	if e := c.evaluate("i", frames[0].Id, "watch"); e.Body.Result != "2" {
		t.Errorf("i at the third hit of the call line: %s", e.Body.Result)
	}
	// A function's value, as gdb prints it, {int (int, int)} 0x... <add>
	// (it was an error text: a function has no size to read), its
	// parameters from its DWARF (TestFunctionValuesMatchGDB).
	if e := c.evaluate("add", frames[0].Id, "watch"); !regexp.MustCompile(`^\{int \(int, int\)\} 0x[0-9a-f]+ <add>$`).MatchString(e.Body.Result) {
		t.Errorf("add: %q, want gdb's {int (int, int)} 0x... <add>", e.Body.Result)
	}
	c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
	st = c.stopped()
	if st.Body.HitBreakpointIds[0] != bps[0].Id {
		t.Fatalf("second stop: %+v", st.Body)
	}
	frames = c.stack(st.Body.ThreadId)
	if e := c.evaluate("a", frames[0].Id, "watch"); e.Body.Result != "30" {
		t.Errorf("condition a == 30 stopped with a = %s", e.Body.Result)
	}
	c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
	st = c.stopped()
	if st.Body.HitBreakpointIds[0] != bps[2].Id {
		t.Fatalf("third stop: %+v", st.Body)
	}
	c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
	c.event("exited")
	c.event("terminated")
	console := c.output("console")
	for _, want := range []string{"sum 10+0=10 {braces}\n", "sum 20+1=21 {braces}\n", "sum 30+2=32 {braces}\n"} {
		if !strings.Contains(console, want) {
			t.Errorf("log points: console %q lacks %q", console, want)
		}
	}
	c.request("disconnect", nil)
}

// TestBreakpointConditionError: a condition that cannot be evaluated
// stops, saying why.
func TestBreakpointConditionError(t *testing.T) {
	prog := buildProg(t)
	c := newClient(t)
	c.launch(prog, nil)
	bps := c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "add", "condition": "no_such_name > 1"}}}).(*godap.SetFunctionBreakpointsResponse).Body.Breakpoints
	if !bps[0].Verified {
		t.Fatalf("%+v", bps)
	}
	c.request("configurationDone", nil)
	st := c.stopped()
	if st.Body.Reason != "function breakpoint" || !strings.Contains(st.Body.Description, "no_such_name") {
		t.Fatalf("stopped: %+v", st.Body)
	}
	c.request("disconnect", nil)
}
