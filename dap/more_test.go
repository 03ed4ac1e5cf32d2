package dap

import (
	"encoding/base64"
	"strings"
	"testing"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestLibraryBreakpoint: a function breakpoint in a library not loaded yet
// is unverified, then verified with a breakpoint event when dlopen loads
// it, and stops there.
func TestLibraryBreakpoint(t *testing.T) {
	lib := testprog.Build(t, testprog.Spec{Sources: []string{"mod_lib.c"}, Flags: []string{"-shared", "-fPIC"}, Name: "libdaptest.so"})
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"mod_dlopen.c"}, Flags: []string{"-ldl"}})
	c := newClient(t)
	c.launch(prog, nil, lib)
	bps := c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "mod_lib_add"}}}).(*godap.SetFunctionBreakpointsResponse).Body.Breakpoints
	if bps[0].Verified {
		t.Fatalf("verified before the library loaded: %+v", bps)
	}
	c.request("configurationDone", nil)
	ev := c.event("breakpoint").(*godap.BreakpointEvent)
	if ev.Body.Reason != "changed" || ev.Body.Breakpoint.Id != bps[0].Id || !ev.Body.Breakpoint.Verified {
		t.Errorf("breakpoint event: %+v", ev.Body)
	}
	st := c.stopped()
	if st.Body.Reason != "function breakpoint" {
		t.Fatalf("stopped: %+v", st.Body)
	}
	if f := c.stack(st.Body.ThreadId); f[0].Name != "mod_lib_add" || f[1].Name != "main" {
		t.Errorf("frames: %+v", f)
	}
	mods := c.request("modules", nil).(*godap.ModulesResponse).Body.Modules
	found := false
	for _, m := range mods {
		found = found || m.Path == lib
	}
	if !found {
		t.Errorf("modules lack %s: %+v", lib, mods)
	}
	// loadedSources: the primary files of the program's and the library's
	// units, as absolute paths (libc's units keep the relative directory
	// Debian's reproducible builds record, "./elf").
	srcs := c.request("loadedSources", nil).(*godap.LoadedSourcesResponse).Body.Sources
	have := map[string]bool{}
	for _, src := range srcs {
		if strings.HasPrefix(src.Path, "/") {
			have[src.Name] = true
		}
	}
	if !have["mod_lib.c"] || !have["mod_dlopen.c"] {
		t.Errorf("loadedSources lacks mod_lib.c or mod_dlopen.c: %+v", srcs)
	}
	c.request("disconnect", nil)
}

// TestMemoryDisassembly: readMemory and writeMemory on a global,
// disassemble around the pc (before and after it), an instruction
// breakpoint at a disassembled address, modules.
func TestMemoryDisassembly(t *testing.T) {
	prog := buildProg(t)
	c := newClient(t)
	c.launch(prog, nil)
	c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "work"}}})
	c.request("configurationDone", nil)
	st := c.stopped()
	frames := c.stack(st.Body.ThreadId)
	e := c.evaluate("g_origin", frames[0].Id, "watch")
	if e.Body.MemoryReference == "" {
		t.Fatalf("g_origin has no memoryReference: %+v", e.Body)
	}
	mem := c.request("readMemory", map[string]any{"memoryReference": e.Body.MemoryReference, "count": 8}).(*godap.ReadMemoryResponse)
	if b, _ := base64.StdEncoding.DecodeString(mem.Body.Data); len(b) != 8 || b[0] != 1 || b[4] != 2 {
		t.Errorf("readMemory: %+v", mem.Body)
	}
	w := c.request("writeMemory", map[string]any{"memoryReference": e.Body.MemoryReference, "offset": 4,
		"data": base64.StdEncoding.EncodeToString([]byte{9, 0, 0, 0})}).(*godap.WriteMemoryResponse)
	if w.Body.BytesWritten != 4 {
		t.Errorf("writeMemory: %+v", w.Body)
	}
	c.event("memory")
	if e := c.evaluate("g_origin.y", frames[0].Id, "watch"); e.Body.Result != "9" {
		t.Errorf("g_origin.y after writeMemory: %s", e.Body.Result)
	}
	pc := frames[0].InstructionPointerReference
	dis := c.request("disassemble", map[string]any{"memoryReference": pc, "instructionOffset": -3, "instructionCount": 8, "resolveSymbols": true}).(*godap.DisassembleResponse)
	ins := dis.Body.Instructions
	if len(ins) != 8 || ins[3].Address != pc {
		t.Fatalf("disassemble: want the pc %s at index 3: %+v", pc, ins)
	}
	// Stop at the instruction after the pc.
	bps := c.request("setInstructionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"instructionReference": ins[4].Address}}}).(*godap.SetInstructionBreakpointsResponse).Body.Breakpoints
	if !bps[0].Verified {
		t.Fatalf("instruction breakpoint: %+v", bps)
	}
	c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
	st = c.stopped()
	if st.Body.Reason != "instruction breakpoint" {
		t.Fatalf("stopped: %+v", st.Body)
	}
	if f := c.stack(st.Body.ThreadId); f[0].InstructionPointerReference != ins[4].Address {
		t.Errorf("stopped at %s, want %s", f[0].InstructionPointerReference, ins[4].Address)
	}
	c.request("disconnect", nil)
}

// TestCxxExceptions: exception breakpoints on throw and catch, the thrown
// type from exceptionInfo, a derived class's base shown as a child.
func TestCxxExceptions(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"dap_cxx.cc"}, Flags: []string{"-O0"}})
	c := newClient(t)
	caps := c.initialize()
	if len(caps.ExceptionBreakpointFilters) == 0 {
		t.Fatalf("no exception filters: %+v", caps)
	}
	c.request("launch", map[string]any{"program": prog})
	c.event("initialized")
	c.request("setExceptionBreakpoints", map[string]any{"filters": []string{"cpp_throw", "signals"}})
	c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": testprog.Source("dap_cxx.cc")},
		"breakpoints": []map[string]any{{"line": markerLine(t, "dap_cxx.cc", "cxxret")}}})
	c.request("configurationDone", nil)
	st := c.stopped()
	if st.Body.Reason != "exception" {
		t.Fatalf("stopped: %+v", st.Body)
	}
	frames := c.stack(st.Body.ThreadId)
	if !strings.Contains(frames[0].Name, "__cxa_throw") || !strings.HasPrefix(frames[1].Name, "thrower") ||
		frames[1].Line != markerLine(t, "dap_cxx.cc", "throw") {
		t.Errorf("frames at the throw: %+v", frames[:2])
	}
	info := c.request("exceptionInfo", map[string]any{"threadId": st.Body.ThreadId}).(*godap.ExceptionInfoResponse)
	if !strings.Contains(info.Body.ExceptionId, "runtime_error") {
		t.Errorf("exceptionInfo: %+v", info.Body)
	}
	c.request("setExceptionBreakpoints", map[string]any{"filters": []string{"cpp_catch"}})
	c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
	st = c.stopped()
	if f := c.stack(st.Body.ThreadId); st.Body.Reason != "exception" || !strings.Contains(f[0].Name, "__cxa_begin_catch") {
		t.Fatalf("catch stop: %+v %+v", st.Body, f[0])
	}
	c.request("setExceptionBreakpoints", map[string]any{"filters": []string{}})
	c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
	st = c.stopped()
	if st.Body.Reason != "breakpoint" {
		t.Fatalf("stopped: %+v", st.Body)
	}
	frames = c.stack(st.Body.ThreadId)
	locals := c.vars(scopeByName(t, c.scopes(frames[0].Id), "Locals").VariablesReference, nil)
	if caught := varByName(t, locals, "caught"); caught.Value != "1" {
		t.Errorf("caught: %+v", caught)
	}
	// Its text, not expandable to its raw members (as gdb's printer and lldb).
	if w := varByName(t, locals, "word"); w.Value != `"sonde"` || w.VariablesReference != 0 {
		t.Errorf("std::string word: %+v", w)
	}
	d := varByName(t, locals, "d")
	kids := c.vars(d.VariablesReference, nil)
	base := varByName(t, kids, "Base")
	if id := varByName(t, c.vars(base.VariablesReference, nil), "id"); id.Value != "7" {
		t.Errorf("d's Base::id: %+v", id)
	}
	if r := varByName(t, kids, "ratio"); r.Value != "0.5" {
		t.Errorf("d.ratio: %+v", r)
	}
	// A base class that is a template instance (in yaml-cpp, std::string's
	// allocator<char> base showed <Syntax error: expected ")", found "<">:
	// its expression spelled the cast with the template's name).
	leaf := c.vars(varByName(t, locals, "leaf").VariablesReference, nil)
	if len(leaf) != 2 || leaf[0].VariablesReference == 0 || !strings.Contains(leaf[0].Name, "Holder<int>") {
		t.Fatalf("leaf's children: %+v", leaf)
	}
	if h := varByName(t, c.vars(leaf[0].VariablesReference, nil), "held"); h.Value != "5" {
		t.Errorf("leaf's Holder<int>::held: %+v", h)
	}
	if e := c.evaluate(leaf[0].EvaluateName, frames[0].Id, "watch"); e.Body.Result != "{held = 5}" {
		t.Errorf("the base's evaluateName %q: %q", leaf[0].EvaluateName, e.Body.Result)
	}
	c.request("disconnect", nil)
}

// TestDataBreakpoint: dataBreakpointInfo names a watchable variable;
// setDataBreakpoints stops where it is written (hardware debug registers
// needed).
func TestDataBreakpoint(t *testing.T) {
	prog := buildProg(t)
	c := newClient(t)
	c.launch(prog, nil)
	c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "work"}}})
	c.request("configurationDone", nil)
	st := c.stopped()
	frames := c.stack(st.Body.ThreadId)
	info := c.request("dataBreakpointInfo", map[string]any{"name": "watched", "frameId": frames[0].Id}).(*godap.DataBreakpointInfoResponse)
	id, _ := info.Body.DataId.(string)
	if id == "" || len(info.Body.AccessTypes) == 0 {
		t.Fatalf("dataBreakpointInfo: %+v", info.Body)
	}
	args := scopeByName(t, c.scopes(frames[0].Id), "Arguments").VariablesReference
	if bad := c.request("dataBreakpointInfo", map[string]any{"name": "s", "variablesReference": args}).(*godap.DataBreakpointInfoResponse); bad.Body.DataId == nil {
		t.Errorf("a pointer argument is not watchable: %+v", bad.Body)
	}
	bps := c.request("setDataBreakpoints", map[string]any{"breakpoints": []map[string]any{{"dataId": id, "accessType": "write"}}}).(*godap.SetDataBreakpointsResponse).Body.Breakpoints
	// Verified only where the debug registers trap (testprog's own check,
	// with a different program and an execution breakpoint, decides).
	if works, why := testprog.HardwareDebugWorks(); !works {
		if bps[0].Verified || !strings.Contains(bps[0].Message, "do not trap") || !strings.Contains(info.Body.Description, "do not trap") {
			t.Errorf("debug registers do not trap here (%s), yet: %+v, %q", why, bps, info.Body.Description)
		}
		c.request("disconnect", nil)
		t.Logf("the watchpoint was refused, as it should be: hardware debug registers do not trap here (%s); not run into", why)
		return
	}
	if !bps[0].Verified {
		t.Fatalf("setDataBreakpoints: %+v", bps)
	}
	c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
	st = c.stopped()
	if st.Body.Reason != "data breakpoint" || len(st.Body.HitBreakpointIds) != 1 || st.Body.HitBreakpointIds[0] != bps[0].Id {
		t.Fatalf("stopped: %+v", st.Body)
	}
	if f := c.stack(st.Body.ThreadId); f[0].Name != "add" {
		t.Errorf("stopped in %s", f[0].Name)
	}
	c.request("disconnect", nil)
}

// TestStepInTargetsCompletionsRestart: the calls of a line as step-in
// targets and a step into the one asked for; completions of the frame's
// names; restart runs the program again with its breakpoints.
func TestStepInTargetsCompletionsRestart(t *testing.T) {
	prog := buildProg(t)
	c := newClient(t)
	c.launch(prog, nil)
	c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": testprog.Source("dap_prog.c")},
		"breakpoints": []map[string]any{{"line": markerLine(t, "dap_prog.c", "work")}}})
	c.request("configurationDone", nil)
	st := c.stopped()
	frames := c.stack(st.Body.ThreadId)
	targets := c.request("stepInTargets", map[string]any{"frameId": frames[0].Id}).(*godap.StepInTargetsResponse).Body.Targets
	var workID int
	for _, tg := range targets {
		if tg.Label == "work" {
			workID = tg.Id
		}
	}
	if workID == 0 {
		t.Fatalf("step-in targets lack work: %+v", targets)
	}
	comp := c.request("completions", map[string]any{"text": "gre", "column": 4, "frameId": frames[0].Id}).(*godap.CompletionsResponse).Body.Targets
	if len(comp) != 1 || comp[0].Label != "greet" {
		t.Errorf("completions of gre: %+v", comp)
	}
	c.request("stepIn", map[string]any{"threadId": st.Body.ThreadId, "targetId": workID})
	st = c.stopped()
	if f := c.stack(st.Body.ThreadId); st.Body.Reason != "step" || f[0].Name != "work" {
		t.Fatalf("step into work: %+v %+v", st.Body, f[0])
	}
	old := st.Body.ThreadId
	c.request("restart", nil)
	proc := c.event("process").(*godap.ProcessEvent)
	st = c.stopped()
	if proc.Body.SystemProcessId == old || st.Body.ThreadId != proc.Body.SystemProcessId || st.Body.Reason != "breakpoint" {
		t.Fatalf("after restart: process %+v, stopped %+v", proc.Body, st.Body)
	}
	waitGone(t, old)
	c.request("disconnect", nil)
}

// TestRunInTerminal: with runInTerminal the client's terminal (here, the
// test) starts the program; sonde attaches before it runs, its
// breakpoints stop it, its output goes to the terminal, not to output
// events, and its exit code is reported.
func TestRunInTerminal(t *testing.T) {
	prog := buildProg(t)
	c := newClient(t)
	c.request("initialize", map[string]any{"adapterID": "sonde", "linesStartAt1": true, "supportsRunInTerminalRequest": true})
	var term strings.Builder
	cmd, seq := terminalStart(t, c, map[string]any{"program": prog, "args": []string{"run"}, "runInTerminal": true, "env": map[string]string{"DAP_GREETING": "terminal"}}, &term)
	c.send("runInTerminal-response", nil) // an unknown request, answered with an error: the server reads on
	c.response(seq)
	c.event("initialized")
	c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": testprog.Source("dap_prog.c")},
		"breakpoints": []map[string]any{{"line": markerLine(t, "dap_prog.c", "add")}}})
	c.request("configurationDone", nil)
	c.event("breakpoint")
	st := c.stopped()
	if f := c.stack(st.Body.ThreadId); st.Body.Reason != "breakpoint" || f[0].Name != "add" || st.Body.ThreadId != cmd.Process.Pid {
		t.Fatalf("stopped: %+v %+v (shell %d)", st.Body, f[0], cmd.Process.Pid)
	}
	c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": testprog.Source("dap_prog.c")}, "breakpoints": []any{}})
	c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
	if e := c.event("exited").(*godap.ExitedEvent); e.Body.ExitCode != 3 {
		t.Errorf("exit code %d", e.Body.ExitCode)
	}
	cmd.Wait()
	if !strings.Contains(term.String(), "hello terminal") || strings.Contains(c.output("stdout"), "hello") {
		t.Errorf("terminal %q, output events %q", term.String(), c.output("stdout"))
	}
	c.request("disconnect", nil)
}

// TestInlineFrames: at -O2 a stop in leaf shows the inlined middle as a
// frame of its own, with its own arguments and locals, and outer's with
// outer's; a caller frame evaluates in its own scope.
func TestInlineFrames(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"ex_inline.c"}, Flags: []string{"-O2", "-gdwarf-4"}, Name: "ex_inline_dap"})
	c := newClient(t)
	c.launch(prog, nil)
	c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "leaf"}}})
	c.request("configurationDone", nil)
	st := c.stopped()
	frames := c.stack(st.Body.ThreadId)
	if len(frames) < 4 || frames[0].Name != "leaf" || frames[1].Name != "middle" || frames[2].Name != "outer" || frames[3].Name != "main" {
		t.Fatalf("frames: %+v", frames)
	}
	if frames[1].InstructionPointerReference != frames[2].InstructionPointerReference {
		t.Errorf("an inlined frame has its container's pc: %s, %s", frames[1].InstructionPointerReference, frames[2].InstructionPointerReference)
	}
	args := c.vars(scopeByName(t, c.scopes(frames[1].Id), "Arguments").VariablesReference, nil)
	if len(args) != 1 || args[0].Name != "x" {
		t.Errorf("middle's arguments: %+v", args)
	}
	if e := c.evaluate("y + 100", frames[2].Id, "watch"); e.Body.Result != "102" {
		t.Errorf("outer's y + 100: %s", e.Body.Result)
	}
	if e := c.evaluate("v", frames[0].Id, "watch"); e.Body.Result != "307" {
		t.Errorf("leaf's v: %s", e.Body.Result)
	}
	c.request("disconnect", nil)
}
