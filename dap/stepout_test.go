package dap

import (
	"strings"
	"testing"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestStepOutOutermost: a step out of main stops in its caller in libc,
// the frame the stack showed under main (lldb-dap's step out, whose stack
// goes past main as sonde's does; gdb, whose backtrace ends at main,
// refuses). A step out of a frame with no caller, the program's entry
// point, is refused in gdb's words, and the thread stays where it was: a
// continue then runs the program to its end (before, the refusal read
// "resume: error: step out: unwind: frame 0 ... no unwind information").
func TestStepOutOutermost(t *testing.T) {
	prog := buildProg(t)
	t.Run("main", func(t *testing.T) {
		c := newClient(t)
		c.launch(prog, nil)
		c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": testprog.Source("dap_prog.c")},
			"breakpoints": []map[string]any{{"line": markerLine(t, "dap_prog.c", "work")}}})
		c.request("configurationDone", nil)
		st := c.stopped()
		before := c.stack(st.Body.ThreadId)
		if len(before) < 2 || before[0].Name != "main" {
			t.Fatalf("frames at the breakpoint: %+v", before)
		}
		c.request("stepOut", map[string]any{"threadId": st.Body.ThreadId})
		st = c.stopped()
		after := c.stack(st.Body.ThreadId)
		if st.Body.Reason != "step" || len(after) != len(before)-1 || after[0].Name != before[1].Name {
			t.Fatalf("after the step out of main: %+v, frames %+v (before %+v)", st.Body, after, before)
		}
		c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
		if e := c.event("exited").(*godap.ExitedEvent); e.Body.ExitCode != 3 {
			t.Errorf("exit code %d", e.Body.ExitCode)
		}
		if out := c.output("stdout"); !strings.Contains(out, "result 63") {
			t.Errorf("output %q", out)
		}
		c.request("disconnect", nil)
	})
	t.Run("entry", func(t *testing.T) {
		c := newClient(t)
		c.launch(prog, map[string]any{"stopOnEntry": true})
		c.request("configurationDone", nil)
		st := c.stopped()
		frames := c.stack(st.Body.ThreadId)
		if len(frames) != 1 {
			t.Fatalf("frames at the entry point: %+v", frames)
		}
		seq := c.send("stepOut", map[string]any{"threadId": st.Body.ThreadId})
		if e := c.errorResponse(seq); e == nil || e.Body.Error == nil || e.Body.Error.Format != `"finish" not meaningful in the outermost frame.` {
			t.Fatalf("step out of the entry point: %+v", e)
		}
		if again := c.stack(st.Body.ThreadId); len(again) != 1 || again[0].InstructionPointerReference != frames[0].InstructionPointerReference {
			t.Errorf("the thread moved: %+v, was %+v", again, frames)
		}
		c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
		if e := c.event("exited").(*godap.ExitedEvent); e.Body.ExitCode != 3 {
			t.Errorf("exit code %d", e.Body.ExitCode)
		}
		c.request("disconnect", nil)
	})
}
