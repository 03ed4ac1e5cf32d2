package services_test

import (
	"encoding/binary"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// TestLiveSkipPrologue checks the SkipPrologue breakpoint property: a function
// breakpoint then stops where gdb's `break add` does (past the -O0 frame setup),
// where the parameters already hold their values; without it, at the entry.
func TestLiveSkipPrologue(t *testing.T) {
	la := startLive(t)
	prog := agentProg(t)
	out, err := gdbtest.Run("-ex", "break add", prog)
	if err != nil {
		t.Skipf("gdb is needed as the oracle: %v", err)
	}
	m := regexp.MustCompile(`Breakpoint 1 at (0x[0-9a-f]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("gdb said %s", out)
	}
	gdbAddr, _ := strconv.ParseUint(string(m[1]), 0, 64) // link-time: agent_prog is PIE

	proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	la.suspended(0, thread)
	var e error
	var caps map[string]any
	la.decode("Breakpoints", "getCapabilities", []any{proc}, &e, &caps)
	if caps["SkipPrologue"] != true {
		t.Fatalf("capabilities %v do not offer SkipPrologue", caps)
	}
	la.ok("Breakpoints", "add", map[string]any{"ID": "entry", "Enabled": true, "Location": "add"})
	entryPC, _, _ := la.resume(thread, 0)
	la.ok("Breakpoints", "remove", []string{"entry"})
	la.ok("Breakpoints", "add", map[string]any{"ID": "body", "Enabled": true, "Location": "add", "SkipPrologue": true})
	bodyPC, reason, params := la.resume(thread, 0)
	if reason != "Breakpoint" || len(anyStrings(params["BPs"])) != 1 {
		t.Fatalf("stop %q %v", reason, params)
	}
	// Both stops are in add; their distance is gdb's distance from the entry.
	var sym string
	la.decode("Symbols", "findByAddr", []any{thread, bodyPC}, &e, &sym)
	var sp map[string]any
	la.decode("Symbols", "getContext", []any{sym}, &e, &sp)
	if sp["Name"] != "add" {
		t.Fatalf("SkipPrologue stop in %v, want add", sp["Name"])
	}
	entry := num(sp["Address"])
	if entryPC != entry {
		t.Fatalf("plain breakpoint at %#x, add's entry is %#x", entryPC, entry)
	}
	f, _ := gdbtest.Run("-ex", "info address add", prog)
	fm := regexp.MustCompile(`at address (0x[0-9a-f]+)`).FindSubmatch(f)
	if fm == nil {
		t.Fatalf("gdb said %s", f)
	}
	gdbEntry, _ := strconv.ParseUint(string(fm[1]), 0, 64)
	if bodyPC-entry != gdbAddr-gdbEntry || bodyPC == entry {
		t.Fatalf("SkipPrologue stop at entry+%d, gdb's break add at entry+%d", bodyPC-entry, gdbAddr-gdbEntry)
	}
	// The parameters are in place there: the body stop above was still the
	// first call, add(0, 0); the next one is add(1, twice(1)) = add(1, 2).
	if pc, _, _ := la.resume(thread, 0); pc != bodyPC {
		t.Fatalf("second SkipPrologue stop at %#x, want %#x", pc, bodyPC)
	}
	var props map[string]any
	la.decode("Expressions", "create", []any{thread, nil, "a * 10 + b"}, &e, &props)
	var val []byte
	var vprops map[string]any
	if err := la.call("Expressions", "evaluate", props["ID"]).Decode(&val, &e, &vprops); err != nil || e != nil {
		t.Fatalf("evaluate: %v %v", err, e)
	}
	var w [8]byte
	copy(w[:], val)
	if v := binary.LittleEndian.Uint64(w[:]); v != 12 {
		t.Fatalf("a*10+b = %d at the SkipPrologue stop, want 12 (add(1, 2))", v)
	}
}

// TestLiveSkipPrologueMatchesGdb: SkipPrologue breakpoints on the functions
// of step_cases.c are planted where gdb's `break FUNCTION` puts its
// breakpoints — also in functions written on one line, whose prologue ends
// at a second line-table row of that same line (taking the end of the line
// instead put the breakpoint at the next function's entry).
func TestLiveSkipPrologueMatchesGdb(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"step_cases.c"}, Flags: []string{"-O0"}})
	funcs := []string{"one_line", "on_signal", "start_here", "signal_self", "main"}
	var args []string
	for _, f := range funcs {
		args = append(args, "-ex", "break "+f, "-ex", "info address "+f)
	}
	out, err := gdbtest.Run(append(args, prog)...)
	if err != nil {
		t.Skipf("gdb is needed as the oracle: %v", err)
	}
	bps := regexp.MustCompile(`Breakpoint \d+ at (0x[0-9a-f]+)`).FindAllSubmatch(out, -1)
	entries := regexp.MustCompile(`at address (0x[0-9a-f]+)`).FindAllSubmatch(out, -1)
	if len(bps) != len(funcs) || len(entries) != len(funcs) {
		t.Fatalf("gdb said %s", out)
	}
	la := startLive(t)
	m := la.events.mark()
	proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	la.suspended(m, thread)
	for i, f := range funcs {
		bp, _ := strconv.ParseUint(string(bps[i][1]), 0, 64)
		entry, _ := strconv.ParseUint(string(entries[i][1]), 0, 64)
		m := la.events.mark()
		la.ok("Breakpoints", "add", map[string]any{"ID": f, "Enabled": true, "Location": f, "SkipPrologue": true})
		inst, _ := la.statusOf(m, f)
		if len(inst) != 1 {
			t.Fatalf("%s: instances %v", f, inst)
		}
		got := num(inst[0]["Address"]) - la.symbolAddress(thread, f)
		if got != bp-entry {
			t.Errorf("SkipPrologue breakpoint on %s at entry+%d, gdb's at entry+%d", f, got, bp-entry)
		}
	}
}

// TestLiveStepIntoSelectionBreakpoint: a breakpoint with File and Line and
// a Location naming the function called on that line (what Eclipse's Step
// Into Selection sends, with SkipPrologue) stops in the function past its
// prologue, as the C agent plants it, not at the line; File and Line alone
// stop at the line.
func TestLiveStepIntoSelectionBreakpoint(t *testing.T) {
	la := startLive(t)
	prog := agentProg(t)
	callLine := sourceLine(t, "agent_prog.c", "AGENT_CALL_LINE")
	proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	la.suspended(0, thread)
	la.ok("Breakpoints", "add", map[string]any{"ID": "line", "Enabled": true, "File": "agent_prog.c", "Line": callLine})
	pc, reason, _ := la.resume(thread, 0)
	if _, line := la.lineAt(thread, pc); reason != "Breakpoint" || line != callLine || la.funcAt(thread, pc) == "add" {
		t.Fatalf("File/Line breakpoint: %q in %s line %d, want line %d (the caller's)", reason, la.funcAt(thread, pc), line, callLine)
	}
	la.ok("Breakpoints", "remove", []string{"line"})
	la.ok("Breakpoints", "add", map[string]any{"ID": "sel", "Enabled": true, "File": "agent_prog.c", "Line": callLine,
		"Location": "add", "SkipPrologue": true})
	pc, reason, params := la.resume(thread, 0)
	if reason != "Breakpoint" || !slices.Equal(anyStrings(params["BPs"]), []string{"sel"}) {
		t.Fatalf("stop %q %v, want breakpoint sel", reason, params)
	}
	if f := la.funcAt(thread, pc); f != "add" {
		t.Fatalf("Step Into Selection breakpoint stopped in %s, want add", f)
	}
	var e error
	var sym string
	la.decode("Symbols", "findByAddr", []any{thread, pc}, &e, &sym)
	var sp map[string]any
	la.decode("Symbols", "getContext", []any{sym}, &e, &sp)
	if pc == num(sp["Address"]) {
		t.Errorf("stop at add's entry %#x, want past its prologue (SkipPrologue)", pc)
	}
	la.ok("Breakpoints", "remove", []string{"sel"})
	if code := la.runToExit(thread, proc); code != 0 {
		t.Errorf("exit code %d", code)
	}
}
