package services_test

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestLiveExpressionsConditionsAssign debugs ex_vars live: a breakpoint
// condition that is false never stops, one that is true does; the locals of
// a caller frame are read and assigned (memory), a register of the top
// frame is assigned, and the new values read back.
func TestLiveExpressionsConditionsAssign(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"ex_vars.c"}, Flags: []string{"-O0"}, Name: "ex_vars_O0"})
	la := startLive(t)
	m0 := la.events.mark()
	proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	la.suspended(m0, thread)

	// Function breakpoints are planted at the entry, before the prologue has
	// stored the parameters at -O0: conditions use globals here (the -O2 test
	// below uses a parameter, which lives in its register at the entry).
	la.ok("Breakpoints", "add", map[string]any{"ID": "bp-false", "Enabled": true, "Location": "compute", "Condition": "g_int != 42"})
	la.ok("Breakpoints", "add", map[string]any{"ID": "bp-true", "Enabled": true, "Location": "stop_here", "Condition": "g_int == 42 && g_pt.y < 0 && g_huge[sizeof g_huge - 1] == 7"})
	_, reason, params := la.resume(thread, 0)
	if reason != "Breakpoint" || !slices.Equal(anyStrings(params["BPs"]), []string{"bp-true"}) {
		t.Fatalf("stop: %q %v, want the true condition's breakpoint only", reason, params)
	}

	var e error
	var frames []string
	la.decode("StackTrace", "getChildrenRange", []any{thread, 0, 5}, &e, &frames)
	fp1 := frames[1]
	eval := func(scope, src string) []byte {
		t.Helper()
		var props map[string]any
		la.decode("Expressions", "create", []any{scope, nil, src}, &e, &props)
		var val []byte
		var vprops map[string]any
		if err := la.call("Expressions", "evaluate", props["ID"]).Decode(&val, &e, &vprops); err != nil || e != nil {
			t.Fatalf("evaluate %q: %v %v", src, err, e)
		}
		return val
	}
	le := func(b []byte) uint64 {
		var w [8]byte
		copy(w[:], b)
		return binary.LittleEndian.Uint64(w[:])
	}
	if v := le(eval(fp1, "local")); v != 10 {
		t.Fatalf("local = %d, want 10", v)
	}
	// Assign through the local's expression ID (as a Variables view does).
	var props map[string]any
	la.decode("Expressions", "create", []any{fp1, nil, "local"}, &e, &props)
	m1 := la.events.mark()
	la.ok("Expressions", "assign", props["ID"], []byte{0xe8, 0x03, 0, 0})
	la.events.wait(t, m1, "valueChanged", is("Expressions", "valueChanged", props["ID"].(string)))
	if v := le(eval(fp1, "local")); v != 1000 {
		t.Errorf("local after assign = %d, want 1000", v)
	}
	// Assignment expressions write too, globals and struct members included.
	if v := le(eval(fp1, "g_outer.pts[1].y = inner * 3")); v != 33 {
		t.Errorf("assignment value %d, want 33", v)
	}
	if v := le(eval(fp1, "g_outer.pts[1].y")); v != 33 {
		t.Errorf("g_outer.pts[1].y = %d after assignment, want 33", v)
	}
	if v := le(eval(fp1, "g_bits.b = -5, g_bits.b")); int8(v) != -5 {
		t.Errorf("bit field after assignment: %d", int8(v))
	}
	if v := le(eval(fp1, "g_bits.c")); v != 1000 {
		t.Errorf("neighbouring bit field changed: %d", v)
	}
	frame0 := frames[0]
	if v := le(eval(frame0, "$rax = 0x12345678")); v != 0x12345678 {
		t.Errorf("$rax assignment gives %#x", v)
	}
	if v := le(eval(thread, "$rax")); v != 0x12345678 {
		t.Errorf("$rax reads back %#x", v)
	}
	la.ok("Breakpoints", "remove", []string{"bp-false", "bp-true"})
}

// TestLiveConditionOnParameter: at -O2 a parameter is in its register at
// the function's entry, so a condition on it decides the stop.
func TestLiveConditionOnParameter(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"ex_vars.c"}, Flags: []string{"-O2"}, Name: "ex_vars_O2"})
	la := startLive(t)
	m0 := la.events.mark()
	proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	la.suspended(m0, thread)
	la.ok("Breakpoints", "add", map[string]any{"ID": "bp-false", "Enabled": true, "Location": "compute", "Condition": "a == 99"})
	la.ok("Breakpoints", "add", map[string]any{"ID": "bp-true", "Enabled": true, "Location": "stop_here", "Condition": "n == 109"})
	_, reason, params := la.resume(thread, 0)
	if reason != "Breakpoint" || !slices.Equal(anyStrings(params["BPs"]), []string{"bp-true"}) {
		t.Fatalf("stop: %q %v, want the true condition's breakpoint only", reason, params)
	}
	la.ok("Breakpoints", "remove", []string{"bp-false", "bp-true"})
}

// TestLiveMemberFunctionVariables: in a C++ member function the frame's
// variables, as a Variables view lists them, include this (artificial in
// DWARF, shown by gdb's info args and by IDEs), and expressions see the
// members by their names.
func TestLiveMemberFunctionVariables(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"step_cxx.cc"}, Flags: []string{"-O0"}})
	la := startLive(t)
	_, thread := la.launchStopped(prog, nil, nil)
	la.breakAt(thread, map[string]any{"ID": "sq", "Location": "ns::Square::area", "SkipPrologue": true})
	var e error
	frames := la.topFrames(thread, 1)
	var kids []string
	la.decode("Expressions", "getChildren", []any{frames[0]}, &e, &kids)
	names := map[string]bool{}
	for _, id := range kids {
		var props map[string]any
		la.decode("Expressions", "getContext", []any{id}, &e, &props)
		name, _ := props["Expression"].(string)
		names[name] = true
	}
	if !names["this"] {
		t.Errorf("ns::Square::area's variables %v lack this", names)
	}
	var props map[string]any
	la.decode("Expressions", "create", []any{frames[0], nil, "s * s"}, &e, &props)
	var val []byte
	var vprops map[string]any
	if err := la.call("Expressions", "evaluate", props["ID"]).Decode(&val, &e, &vprops); err != nil || e != nil || len(val) != 8 ||
		math.Float64frombits(binary.LittleEndian.Uint64(val)) != 9 {
		t.Errorf("s * s in ns::Square::area (s = 3): % x %v %v", val, err, e)
	}
}
