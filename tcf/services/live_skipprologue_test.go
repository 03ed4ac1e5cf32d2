package services_test

import (
	"encoding/binary"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// TestLiveSkipPrologue checks the SkipPrologue breakpoint property: a function
// breakpoint then stops where gdb's `break add` does (past the -O0 frame setup),
// where the parameters already hold their values; without it, at the entry.
func TestLiveSkipPrologue(t *testing.T) {
	la := startLive(t)
	prog := agentProg(t)
	out, err := exec.Command("gdb", "-batch", "-nx", "-ex", "break add", prog).CombinedOutput()
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
	f, _ := exec.Command("gdb", "-batch", "-nx", "-ex", "info address add", prog).CombinedOutput()
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
