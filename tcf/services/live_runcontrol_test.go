package services_test

import (
	"slices"
	"strings"
	"testing"
)

// TestLiveStartAtMainBreakpointsToExit is the P0 session over a real
// process: start stopped at main, a function breakpoint, continue, then run
// to exit, checking every event and its arity in order.
func TestLiveStartAtMainBreakpointsToExit(t *testing.T) {
	prog := agentProg(t)
	la := startLive(t)
	m0 := la.events.mark()
	proc, props := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	if props["Attached"] != true {
		t.Errorf("start: Attached = %v", props["Attached"])
	}
	pc, reason, params, _ := la.suspended(m0, thread)
	if reason != "Suspended" || len(params) != 0 {
		t.Errorf("stop at main: reason %q params %v, want Suspended {}", reason, params)
	}
	if fn := la.funcAt(thread, pc); fn != "main" {
		t.Errorf("stop at main: pc 0x%x is in %q", pc, fn)
	}
	// Start: the process, its memory, the thread, then the stop.
	seq := names(la.events.since(m0), func(e event) bool { return e.Service != "Breakpoints" && e.Service != "Streams" })
	want := []string{"RunControl.contextAdded", "Memory.contextAdded", "RunControl.contextAdded"}
	if len(seq) < 3 || !slices.Equal(seq[:3], want) {
		t.Errorf("start events %v, want %v then the stops", seq, want)
	}
	for _, e := range la.events.since(m0) {
		checkArity(t, e)
	}

	// A function breakpoint, its status event and its hit.
	m1 := la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "bp-add", "Enabled": true, "Location": "add"})
	st, _ := la.events.wait(t, m1, "status of bp-add", is("Breakpoints", "status", "bp-add"))
	inst := instances(st.Args[1])
	if len(inst) != 1 || inst[0]["Error"] != nil {
		t.Fatalf("bp-add status %v", st)
	}
	addAddr := num(inst[0]["Address"])
	pc, reason, params = la.resume(thread, 0)
	if reason != "Breakpoint" || pc != addAddr || !slices.Equal(anyStrings(params["BPs"]), []string{"bp-add"}) {
		t.Errorf("after resume: pc 0x%x reason %q params %v, want 0x%x Breakpoint BPs [bp-add]", pc, reason, params, addAddr)
	}
	var e error
	var susp bool
	var statePC uint64
	var stReason string
	var stParams map[string]any
	la.decode("RunControl", "getState", []any{thread}, &e, &susp, &statePC, &stReason, &stParams)
	if !susp || statePC != pc || stReason != "Breakpoint" {
		t.Errorf("getState: %v 0x%x %q", susp, statePC, stReason)
	}
	var status map[string]any
	la.decode("Breakpoints", "getStatus", []any{"bp-add"}, &e, &status)
	if hc := num(instances(status)[0]["HitCount"]); hc != 1 {
		t.Errorf("HitCount after one hit: %d", hc)
	}
	// Remove it and run to exit.
	la.ok("Breakpoints", "remove", []string{"bp-add"})
	m2 := la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	la.events.wait(t, m2, "Memory.contextRemoved", is("Memory", "contextRemoved", proc))
	evs := la.events.since(m2)
	for _, e := range evs {
		checkArity(t, e)
	}
	seq = names(evs, func(e event) bool { return e.Service != "Streams" })
	want = []string{"RunControl.contextResumed", "Processes.exited", "ProcessesV1.exited",
		"RunControl.contextRemoved", "RunControl.contextRemoved", "Memory.contextRemoved"}
	seq = slices.DeleteFunc(seq, func(s string) bool { return s == "RunControl.contextStateChanged" })
	if !slices.Equal(seq, want) {
		t.Errorf("exit events:\n%s\nwant %v", dump(evs), want)
	}
	for _, e := range evs {
		if e.Name == "exited" && num(e.Args[1]) != 0 {
			t.Errorf("exit code %v", e)
		}
	}
	// Commands on the exited contexts are errors, never crashes.
	r := la.call("RunControl", "getState", thread)
	if err := r.Decode(&e, nil, nil, nil, nil); err != nil || errCode(t, e) != 16 {
		t.Errorf("getState of an exited thread: %v %v, want INV_CONTEXT and 5 fields", err, e)
	}
}

func instances(status any) []map[string]any {
	m, _ := status.(map[string]any)
	var out []map[string]any
	list, _ := m["Instances"].([]any)
	for _, x := range list {
		if im, ok := x.(map[string]any); ok {
			out = append(out, im)
		}
	}
	return out
}

func anyStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// eventArity is the argument count the Python and Java proxies insist on.
var eventArity = map[string]int{
	"RunControl.contextAdded": 1, "RunControl.contextChanged": 1, "RunControl.contextRemoved": 1,
	"RunControl.contextSuspended": 4, "RunControl.contextResumed": 1, "RunControl.containerSuspended": 5,
	"RunControl.containerResumed": 1, "RunControl.contextException": 2, "RunControl.contextStateChanged": 1,
	"Processes.exited": 2, "ProcessesV1.exited": 2,
	"Memory.contextAdded": 1, "Memory.contextChanged": 1, "Memory.contextRemoved": 1, "Memory.memoryChanged": 2,
	"MemoryMap.changed":        1,
	"Breakpoints.contextAdded": 1, "Breakpoints.contextChanged": 1, "Breakpoints.contextRemoved": 1, "Breakpoints.status": 2,
	"Streams.created": 3, "Streams.disposed": 2,
	"Registers.contextChanged": 0, "Registers.registerChanged": 1,
	"Terminals.exited": 2, "Terminals.winSizeChanged": 3,
	"PathMap.changed": 0,
	"Locator.Hello":   1,
}

func checkArity(t *testing.T, e event) {
	t.Helper()
	n, ok := eventArity[e.Service+"."+e.Name]
	if !ok {
		t.Errorf("unknown event %s", e)
		return
	}
	if len(e.Args) != n {
		t.Errorf("event %s has %d arguments, clients insist on %d", e, len(e.Args), n)
	}
	if strings.Contains(strings.Join(e.Raw, ""), "undecodable") {
		t.Errorf("event %s: undecodable argument", e)
	}
}

// TestLiveFaultReported: a program that writes through a null pointer stops
// as the C agent reports it — reason "Signal 11" with the signal in the
// state, then contextException naming the fault and its address — with the
// faulting function on top of its stack; resumed, it dies of the signal
// (exit code -11).
func TestLiveFaultReported(t *testing.T) {
	la := startLive(t)
	proc, thread := la.stoppedAtMain("crash")
	m := la.events.mark()
	pc, reason, params := la.resume(thread, 0)
	if reason != "Signal 11" || num(params["Signal"]) != 11 || params["SignalName"] != "SIGSEGV" {
		t.Fatalf("fault reported as %q %v", reason, params)
	}
	e, _ := la.events.wait(t, m, "contextException", is("RunControl", "contextException", thread))
	if msg := e.str(1); !strings.HasPrefix(msg, "Signal 11: ") || !strings.Contains(msg, "0x0") {
		t.Errorf("contextException %q, want the signal and the faulting address", msg)
	}
	if f := la.funcAt(thread, pc); f != "main" {
		t.Errorf("fault in %q, want main", f)
	}
	var e2 error
	var susp bool
	var spc uint64
	var sreason string
	var sparams map[string]any
	la.decode("RunControl", "getState", []any{thread}, &e2, &susp, &spc, &sreason, &sparams)
	if !susp || spc != pc || sreason != "Signal 11" || num(sparams["Signal"]) != 11 {
		t.Errorf("getState: suspended %v at %#x, reason %q %v", susp, spc, sreason, sparams)
	}
	if code := la.runToExit(thread, proc); code != -11 {
		t.Errorf("exit code %d, want -11", code)
	}
}
