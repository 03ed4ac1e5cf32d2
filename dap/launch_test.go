package dap

import (
	"path/filepath"
	"strings"
	"testing"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestLaunchSession drives a whole session on a C program: launch with
// arguments and an environment, breakpoints by line and by function,
// stops, the stack, scopes and variables (structured, paged, hex),
// evaluation, stepping, program output, and the exit code before
// terminated.
func TestLaunchSession(t *testing.T) {
	prog := buildProg(t)
	c := newClient(t)
	caps := c.initialize()
	if !caps.SupportsConfigurationDoneRequest || !caps.SupportsFunctionBreakpoints || !caps.SupportsConditionalBreakpoints {
		t.Errorf("capabilities: %+v", caps)
	}
	c.request("launch", map[string]any{"program": prog, "args": []string{"run"}, "env": []string{"DAP_GREETING=dap"},
		"cwd": filepath.Dir(prog), "name": "ignored", "type": "sonde", "request": "launch"})
	c.event("initialized")
	proc := c.event("process").(*godap.ProcessEvent)
	if proc.Body.SystemProcessId <= 0 || proc.Body.StartMethod != "launch" {
		t.Errorf("process event: %+v", proc.Body)
	}

	src := testprog.Source("dap_prog.c")
	addLine := markerLine(t, "dap_prog.c", "add")
	bps := c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": src},
		"breakpoints": []map[string]any{{"line": addLine}, {"line": 100000}}}).(*godap.SetBreakpointsResponse).Body.Breakpoints
	if len(bps) != 2 || !bps[0].Verified || bps[1].Verified || bps[0].Line != addLine || bps[0].Source == nil || bps[0].Source.Path != src {
		t.Fatalf("setBreakpoints: %+v", bps)
	}
	fbps := c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "work"}, {"name": "no_such_function"}}}).(*godap.SetFunctionBreakpointsResponse).Body.Breakpoints
	if len(fbps) != 2 || !fbps[0].Verified || fbps[1].Verified || fbps[1].Message == "" {
		t.Fatalf("setFunctionBreakpoints: %+v", fbps)
	}
	c.request("configurationDone", nil)

	// The function breakpoint in work stops first.
	st := c.stopped()
	if st.Body.Reason != "function breakpoint" || st.Body.ThreadId != proc.Body.SystemProcessId ||
		len(st.Body.HitBreakpointIds) != 1 || st.Body.HitBreakpointIds[0] != fbps[0].Id {
		t.Fatalf("stopped: %+v", st.Body)
	}
	tid := st.Body.ThreadId
	threads := c.request("threads", nil).(*godap.ThreadsResponse).Body.Threads
	if len(threads) != 1 || threads[0].Id != tid {
		t.Errorf("threads: %+v", threads)
	}
	frames := c.stack(tid)
	if len(frames) < 2 || frames[0].Name != "work" || frames[1].Name != "main" {
		t.Fatalf("frames: %+v", frames)
	}
	if frames[0].Source == nil || frames[0].Source.Path != src || !filepath.IsAbs(frames[0].Source.Path) {
		t.Errorf("frame 0 source: %+v", frames[0].Source)
	}
	if want := markerLine(t, "dap_prog.c", "work"); frames[1].Line != want {
		t.Errorf("main's line is %d, want the call's %d", frames[1].Line, want)
	}
	if !strings.HasPrefix(frames[0].InstructionPointerReference, "0x") {
		t.Errorf("instructionPointerReference %q", frames[0].InstructionPointerReference)
	}
	// Paging.
	page := c.request("stackTrace", map[string]any{"threadId": tid, "startFrame": 1, "levels": 1}).(*godap.StackTraceResponse).Body
	if len(page.StackFrames) != 1 || page.StackFrames[0].Name != "main" || page.TotalFrames != len(frames) {
		t.Errorf("paged stackTrace: %+v", page)
	}

	scopes := c.scopes(frames[0].Id)
	args := c.vars(scopeByName(t, scopes, "Arguments").VariablesReference, nil)
	n := varByName(t, args, "n")
	if n.Value != "3" || n.Type != "int" {
		t.Errorf("n: %+v", n)
	}
	if hex := varByName(t, c.vars(scopeByName(t, scopes, "Arguments").VariablesReference, map[string]any{"format": map[string]any{"hex": true}}), "n"); hex.Value != "0x3" {
		t.Errorf("n in hex: %+v", hex)
	}
	s := varByName(t, args, "s")
	if s.VariablesReference == 0 || s.Type != "struct shape *" {
		t.Fatalf("s: %+v", s)
	}
	fields := c.vars(s.VariablesReference, nil)
	if name := varByName(t, fields, "name"); !strings.Contains(name.Value, `"box"`) {
		t.Errorf("s->name: %+v", name)
	}
	tags := varByName(t, fields, "tags")
	if tags.IndexedVariables != 5 || tags.VariablesReference == 0 {
		t.Fatalf("tags: %+v", tags)
	}
	elems := c.vars(tags.VariablesReference, map[string]any{"filter": "indexed", "start": 1, "count": 2})
	if len(elems) != 2 || elems[0].Name != "[1]" || elems[0].Value != "20" || elems[1].Value != "30" {
		t.Errorf("tags[1..2]: %+v", elems)
	}
	corner := c.vars(varByName(t, fields, "corner").VariablesReference, nil)
	if len(corner) != 2 || !strings.Contains(corner[1].Value, "x = 3") {
		t.Errorf("corner: %+v", corner)
	}
	origin := c.vars(varByName(t, fields, "origin").VariablesReference, nil)
	if y := varByName(t, origin, "y"); y.Value != "2" || y.EvaluateName == "" {
		t.Errorf("origin->y: %+v", y)
	}
	locals := c.vars(scopeByName(t, scopes, "Locals").VariablesReference, nil)
	varByName(t, locals, "total")
	regs := c.vars(scopeByName(t, scopes, "Registers").VariablesReference, nil)
	if rip := varByName(t, regs, "rip"); !strings.HasPrefix(rip.Value, "0x") {
		t.Errorf("rip: %+v", rip)
	}
	if e := c.evaluate("s->tags[2] + n", frames[0].Id, "watch"); e.Body.Result != "33" {
		t.Errorf("evaluate: %+v", e.Body)
	}
	if e := c.evaluate("*s", frames[0].Id, "hover"); e.Body.VariablesReference == 0 {
		t.Errorf("evaluate *s is not expandable: %+v", e.Body)
	}

	// On to add: breakpoint by line; its caller's line is the call.
	c.request("continue", map[string]any{"threadId": tid})
	st = c.stopped()
	if st.Body.Reason != "breakpoint" || len(st.Body.HitBreakpointIds) != 1 || st.Body.HitBreakpointIds[0] != bps[0].Id {
		t.Fatalf("stopped: %+v", st.Body)
	}
	frames = c.stack(tid)
	if len(frames) < 3 || frames[0].Name != "add" || frames[0].Line != addLine || frames[1].Name != "work" ||
		frames[1].Line != markerLine(t, "dap_prog.c", "call") {
		t.Fatalf("frames at add: %+v", frames)
	}
	// Step a line, then out.
	c.request("next", map[string]any{"threadId": tid})
	if st = c.stopped(); st.Body.Reason != "step" {
		t.Fatalf("next: %+v", st.Body)
	}
	if f := c.stack(tid); f[0].Line != markerLine(t, "dap_prog.c", "add2") {
		t.Errorf("after next: line %d", f[0].Line)
	}
	c.request("stepOut", map[string]any{"threadId": tid})
	if st = c.stopped(); st.Body.Reason != "step" {
		t.Fatalf("stepOut: %+v", st.Body)
	}
	if f := c.stack(tid); f[0].Name != "work" {
		t.Errorf("after stepOut: %+v", f[0])
	}
	// Instruction granularity.
	before := c.stack(tid)[0].InstructionPointerReference
	c.request("next", map[string]any{"threadId": tid, "granularity": "instruction"})
	c.stopped()
	if after := c.stack(tid)[0].InstructionPointerReference; after == before {
		t.Errorf("an instruction step did not move: %s", after)
	}

	// Clear the breakpoints and run to the end.
	c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": src}, "breakpoints": []any{}})
	c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []any{}})
	c.request("continue", map[string]any{"threadId": tid})
	exited := c.event("exited").(*godap.ExitedEvent)
	if exited.Body.ExitCode != 3 {
		t.Errorf("exit code %d, want 3", exited.Body.ExitCode)
	}
	c.event("terminated")
	if out := c.output("stdout"); !strings.Contains(out, "hello dap\n") || !strings.Contains(out, "result 63\n") {
		t.Errorf("stdout: %q", out)
	}
	if out := c.output("stderr"); out != "to stderr\n" {
		t.Errorf("stderr: %q", out)
	}
	c.request("disconnect", nil)
}
