package dap

import (
	"testing"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/testprog"
)

// BenchmarkLaunchToFirstStop: from initialize to the stopped event of a
// line breakpoint in a freshly launched program (the adapter process is
// started outside the timing, as an editor keeps it).
func BenchmarkLaunchToFirstStop(b *testing.B) {
	prog := testprog.Build(b, testprog.Spec{Sources: []string{"dap_prog.c"}, Flags: []string{"-O0"}})
	src := testprog.Source("dap_prog.c")
	line := markerLineB(b, "dap_prog.c", "add")
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c := newBenchClient(b)
		b.StartTimer()
		c.initialize()
		c.request("launch", map[string]any{"program": prog})
		c.event("initialized")
		c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": src}, "breakpoints": []map[string]any{{"line": line}}})
		c.request("configurationDone", nil)
		c.stopped()
		b.StopTimer()
		c.request("disconnect", nil)
		c.close()
	}
}

// BenchmarkStopRound: at a breakpoint stop, what an editor asks for to
// show it: stackTrace, scopes of the top frame, its arguments and locals.
// Each round is at a new stop (the caches of a stop do not carry over).
func BenchmarkStopRound(b *testing.B) {
	prog := testprog.Build(b, testprog.Spec{Sources: []string{"dap_prog.c"}, Flags: []string{"-O0"}})
	c := newBenchClient(b)
	defer c.close()
	c.initialize()
	c.request("launch", map[string]any{"program": prog, "args": []string{"wait"}})
	c.event("initialized")
	c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "add"}}})
	c.request("configurationDone", nil)
	st := c.stopped()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		frames := c.request("stackTrace", map[string]any{"threadId": st.Body.ThreadId, "startFrame": 0, "levels": 20}).(*godap.StackTraceResponse).Body.StackFrames
		scopes := c.scopes(frames[0].Id)
		for _, s := range scopes[:2] {
			c.vars(s.VariablesReference, nil)
		}
		b.StopTimer()
		c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
		st = c.stopped()
		c.forget()
		b.StartTimer()
	}
	b.StopTimer()
	c.request("disconnect", nil)
}

// BenchmarkFirstStopRound: the round of BenchmarkStopRound at a program's
// first stop, a new adapter each time (nothing read before but what the
// launch needed).
func BenchmarkFirstStopRound(b *testing.B) {
	prog := testprog.Build(b, testprog.Spec{Sources: []string{"dap_prog.c"}, Flags: []string{"-O0"}})
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c := newBenchClient(b)
		c.initialize()
		c.request("launch", map[string]any{"program": prog})
		c.event("initialized")
		c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "add"}}})
		c.request("configurationDone", nil)
		st := c.stopped()
		b.StartTimer()
		frames := c.request("stackTrace", map[string]any{"threadId": st.Body.ThreadId, "startFrame": 0, "levels": 20}).(*godap.StackTraceResponse).Body.StackFrames
		scopes := c.scopes(frames[0].Id)
		c.vars(scopeByName(b, scopes, "Locals").VariablesReference, nil)
		b.StopTimer()
		c.request("disconnect", nil)
		c.close()
	}
}
