package services_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
)

// codeByte reads one byte of a process's memory behind the agent's back
// (/proc/PID/mem shows planted breakpoints).
func codeByte(t testing.TB, pid int, addr uint64) byte {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, int64(addr)); err != nil {
		t.Fatal(err)
	}
	return b[0]
}

func pidOf(proc string) int {
	n, _ := strconv.Atoi(proc[1:])
	return n
}

// stoppedAtMain starts agent_prog with args stopped at main.
func (la *liveAgent) stoppedAtMain(args ...string) (proc, thread string) {
	la.t.Helper()
	return la.launchStopped(agentProg(la.t), args, nil)
}

// launchStopped starts prog with args and StopAtMain (plus opts) and waits
// for its first stop.
func (la *liveAgent) launchStopped(prog string, args []string, opts map[string]any) (proc, thread string) {
	la.t.Helper()
	all := map[string]any{"StopAtEntry": false, "StopAtMain": true}
	for k, v := range opts {
		all[k] = v
	}
	m := la.events.mark()
	proc, _ = la.startProcess(prog, args, all)
	thread = mainThread(proc)
	la.suspended(m, thread)
	return proc, thread
}

// statusOf waits for the next status event of id and returns its instances.
func (la *liveAgent) statusOf(from int, id string) ([]map[string]any, int) {
	la.t.Helper()
	e, next := la.events.wait(la.t, from, "status of "+id, is("Breakpoints", "status", id))
	return instances(e.Args[1]), next
}

// TestLiveBreakpointIgnoreCountTemporaryHitCount: IgnoreCount skips hits
// (still counted in HitCount, in status events), Temporary removes the
// breakpoint at its first reported hit.
func TestLiveBreakpointIgnoreCountTemporaryHitCount(t *testing.T) {
	la := startLive(t)
	proc, thread := la.stoppedAtMain()
	m := la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "ign", "Location": "add", "IgnoreCount": 2})
	inst, _ := la.statusOf(m, "ign")
	addAddr := num(inst[0]["Address"])
	// add runs three times (i = 0, 1, 2): the third hit is the first shown.
	m = la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	pc, reason, _, _ := la.suspended(m, thread)
	if pc != addAddr || reason != "Breakpoint" {
		t.Fatalf("stop %x %q", pc, reason)
	}
	var hitCounts []uint64
	for _, e := range la.events.since(m) {
		if e.Name == "status" && e.str(0) == "ign" {
			hitCounts = append(hitCounts, num(instances(e.Args[1])[0]["HitCount"]))
		}
	}
	if !slices.Equal(hitCounts, []uint64{1, 2, 3}) {
		t.Errorf("HitCount in status events %v, want [1 2 3]", hitCounts)
	}
	// The argument of add is 2 at the third call: read it from rdi.
	la.ok("Breakpoints", "remove", []string{"ign"})
	if b := codeByte(t, pidOf(proc), addAddr); b == 0xcc {
		t.Errorf("removed breakpoint still planted")
	}
	// Temporary: stops once at hit(), then is gone.
	proc2, thread2 := la.stoppedAtMain("loop", "5")
	m = la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "tmp", "Location": "hit", "Temporary": true})
	la.ok("RunControl", "resume", thread2, 0, 1)
	_, reason, params, _ := la.suspended(m, thread2)
	if reason != "Breakpoint" || !slices.Equal(anyStrings(params["BPs"]), []string{"tmp"}) {
		t.Errorf("temporary stop %q %v", reason, params)
	}
	la.events.wait(t, m, "contextRemoved of tmp", is("Breakpoints", "contextRemoved", "tmp"))
	var e error
	var ids []string
	la.decode("Breakpoints", "getIDs", nil, &e, &ids)
	if slices.Contains(ids, "tmp") {
		t.Errorf("temporary breakpoint still listed: %v", ids)
	}
	m = la.events.mark()
	la.ok("RunControl", "resume", thread2, 0, 1)
	if code := la.exitCode(m, proc2); code != 0 {
		t.Errorf("exit %d", code)
	}
	for _, e := range la.events.since(m) {
		if e.Name == "contextSuspended" {
			t.Errorf("stopped again after a temporary breakpoint: %v", e)
		}
	}
	_ = proc
}

// TestLiveBreakpointConditionHook: the condition goes through the installed
// evaluator with the stopped thread; false hits neither stop nor count.
func TestLiveBreakpointConditionHook(t *testing.T) {
	la := startLive(t)
	// A stand-in evaluator: "rdi == N" on the thread's registers. The real one
	// is the Expressions service's.
	la.agent.SetConditionEvaluator(func(thread *target.Context, expr string) (bool, error) {
		regs, err := thread.Registers()
		if err != nil {
			return false, err
		}
		want, _ := strconv.ParseUint(expr[len("rdi == "):], 10, 64)
		v, err := regs.DWARF(5) // rdi: add's first argument
		return v == want, err
	})
	_, thread := la.stoppedAtMain()
	m := la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "cond", "Location": "add", "Condition": "rdi == 1"})
	la.ok("RunControl", "resume", thread, 0, 1)
	_, reason, _, _ := la.suspended(m, thread)
	if reason != "Breakpoint" {
		t.Fatalf("reason %q", reason)
	}
	var e error
	var regs []string
	la.decode("Registers", "getChildren", []any{thread}, &e, &regs)
	var status map[string]any
	la.decode("Breakpoints", "getStatus", []any{"cond"}, &e, &status)
	if hc := num(instances(status)[0]["HitCount"]); hc != 1 {
		t.Errorf("HitCount %d, want 1 (the false hit does not count)", hc)
	}
}

// TestLiveBreakpointsOwnedByChannel: a breakpoint another client set goes
// when that client disconnects, even while the process is stopped at it: the
// code bytes are the program's again and the process can run to its end.
func TestLiveBreakpointsOwnedByChannel(t *testing.T) {
	la := startLive(t)
	proc, thread := la.stoppedAtMain("loop", "3")
	c2, ev2 := la.dial()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := la.events.mark()
	if _, err := c2.Call(ctx, "Breakpoints", "add", map[string]any{"ID": "theirs", "Location": "hit"}); err != nil {
		t.Fatal(err)
	}
	inst, _ := la.statusOf(m, "theirs")
	addr := num(inst[0]["Address"])
	orig := codeByte(t, pidOf(proc), addr)
	if orig != 0xcc {
		t.Fatalf("breakpoint not planted: byte %#x", orig)
	}
	// Memory.get hides it.
	var data []byte
	var e error
	la.decode("Memory", "get", []any{proc, addr, 1, 1, 0}, &data, &e, nil)
	if data[0] == 0xcc {
		t.Errorf("Memory.get shows the breakpoint byte")
	}
	want := data[0]
	// Both clients see it in getIDs; our own remove does not drop theirs.
	var ids []string
	la.decode("Breakpoints", "getIDs", nil, &e, &ids)
	if !slices.Contains(ids, "theirs") {
		t.Errorf("getIDs %v", ids)
	}
	la.ok("Breakpoints", "remove", []string{"theirs"})
	if codeByte(t, pidOf(proc), addr) != 0xcc {
		t.Errorf("another channel's remove dropped the breakpoint")
	}
	m = la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	la.suspended(m, thread)
	_ = ev2
	// Ours, to stop the program before it exits, once the other is gone.
	la.ok("Breakpoints", "add", map[string]any{"ID": "at-exit", "Location": "exit"})
	// The owner goes away while the process is stopped at its breakpoint.
	m = la.events.mark()
	c2.Close()
	la.events.wait(t, m, "contextRemoved of theirs", is("Breakpoints", "contextRemoved", "theirs"))
	// ... and the thread its breakpoint stopped runs on (to our exit
	// breakpoint), with the program's own code bytes back.
	_, reason, params, _ := la.suspended(m, thread)
	if reason != "Breakpoint" || !slices.Equal(anyStrings(params["BPs"]), []string{"at-exit"}) {
		t.Errorf("after the owner left: stop %q %v", reason, params)
	}
	if b := codeByte(t, pidOf(proc), addr); b != want {
		t.Errorf("code byte %#x after the owner left, want %#x", b, want)
	}
	seq := names(la.events.since(m), func(e event) bool { return e.Service == "RunControl" || e.Name == "contextRemoved" })
	if !slices.Equal(seq, []string{"Breakpoints.contextRemoved", "RunControl.contextResumed", "RunControl.contextSuspended"}) {
		t.Errorf("events after the owner left: %v", seq)
	}
	m = la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	if code := la.exitCode(m, proc); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestLiveHardwareBreakpointAndWatchpoint: a Hardware breakpoint plants no
// int3; a write watchpoint on agent_counter stops after the write.
func TestLiveHardwareBreakpointAndWatchpoint(t *testing.T) {
	testprog.RequireHardwareDebug(t)
	la := startLive(t)
	proc, thread := la.stoppedAtMain("loop", "3")
	m := la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "hw", "Location": "hit", "BreakpointType": "Hardware"})
	inst, _ := la.statusOf(m, "hw")
	if len(inst) != 1 || inst[0]["BreakpointType"] != "Hardware" {
		t.Fatalf("hw status %v", inst)
	}
	addr := num(inst[0]["Address"])
	if codeByte(t, pidOf(proc), addr) == 0xcc {
		t.Errorf("hardware breakpoint wrote an int3")
	}
	m = la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	pc, reason, params, _ := la.suspended(m, thread)
	if pc != addr || reason != "Breakpoint" || !slices.Equal(anyStrings(params["BPs"]), []string{"hw"}) {
		t.Errorf("hw stop %x %q %v, want %x", pc, reason, params, addr)
	}
	la.ok("Breakpoints", "remove", []string{"hw"})

	// Watchpoint on agent_counter (written by hit()).
	var e error
	var symID string
	la.decode("Symbols", "find", []any{thread, pc, "agent_counter"}, &e, &symID)
	var sym map[string]any
	la.decode("Symbols", "getContext", []any{symID}, &e, &sym)
	counter := num(sym["Address"])
	m = la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "wp", "Location": strconv.FormatUint(counter, 10), "AccessMode": 2, "Size": 4})
	inst, _ = la.statusOf(m, "wp")
	if len(inst) != 1 || inst[0]["Error"] != nil {
		t.Fatalf("watchpoint status %v", inst)
	}
	m = la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	pc, reason, params, _ = la.suspended(m, thread)
	if reason != "Watchpoint" || !slices.Equal(anyStrings(params["BPs"]), []string{"wp"}) || la.funcAt(thread, pc) != "hit" {
		t.Errorf("watchpoint stop %q %v in %q", reason, params, la.funcAt(thread, pc))
	}
	var data []byte
	la.decode("Memory", "get", []any{proc, counter, 1, 4, 0}, &data, &e, nil)
	if data[0] != 1 {
		t.Errorf("agent_counter %d at the watchpoint stop, want 1 (the first hit() wrote it)", data[0])
	}
	la.ok("Breakpoints", "remove", []string{"wp"})
	m = la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	la.exitCode(m, proc)
}

// TestLiveBreakpointSetChangeEnable: set replaces the channel's set; change
// moves a breakpoint; disable unplants and enable plants again.
func TestLiveBreakpointSetChangeEnable(t *testing.T) {
	la := startLive(t)
	proc, thread := la.stoppedAtMain()
	pid := pidOf(proc)
	m := la.events.mark()
	la.ok("Breakpoints", "set", []map[string]any{{"ID": "a", "Location": "add"}, {"ID": "b", "Location": "compute"}})
	instA, _ := la.statusOf(m, "a")
	instB, _ := la.statusOf(m, "b")
	addA, compute := num(instA[0]["Address"]), num(instB[0]["Address"])
	la.ok("Breakpoints", "set", []map[string]any{{"ID": "a", "Location": "add"}})
	if codeByte(t, pid, compute) == 0xcc {
		t.Errorf("set did not remove b")
	}
	la.ok("Breakpoints", "disable", []string{"a"})
	if codeByte(t, pid, addA) == 0xcc {
		t.Errorf("disabled breakpoint planted")
	}
	la.ok("Breakpoints", "enable", []string{"a"})
	if codeByte(t, pid, addA) != 0xcc {
		t.Errorf("enabled breakpoint not planted")
	}
	la.ok("Breakpoints", "change", map[string]any{"ID": "a", "Location": "compute"})
	if codeByte(t, pid, addA) == 0xcc || codeByte(t, pid, compute) != 0xcc {
		t.Errorf("change did not move the breakpoint")
	}
	var e error
	var props map[string]any
	la.decode("Breakpoints", "getProperties", []any{"a"}, &e, &props)
	if props["Location"] != "compute" {
		t.Errorf("getProperties %v", props)
	}
	var caps map[string]any
	la.decode("Breakpoints", "getCapabilities", []any{proc}, &e, &caps)
	if caps["Condition"] != true || caps["IgnoreCount"] != true || caps["Temporary"] != true {
		t.Errorf("capabilities %v", caps)
	}
	// Unknown IDs: error replies.
	la.call("Breakpoints", "getProperties", "nope").Decode(&e, nil)
	if errCode(t, e) == 0 {
		t.Errorf("getProperties of an unknown ID succeeded")
	}
	la.call("Breakpoints", "change", map[string]any{"ID": "nope", "Location": "add"}).Decode(&e)
	if errCode(t, e) == 0 {
		t.Errorf("change of an unknown ID succeeded")
	}
	// An unknown function: add succeeds, the status carries the error.
	m = la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "bad", "Location": "no_such_function"})
	inst, _ := la.statusOf(m, "bad")
	if len(inst) != 1 || inst[0]["Error"] == nil {
		t.Errorf("status of an unresolvable breakpoint %v", inst)
	}
	la.ok("RunControl", "resume", thread, 0, 1)
}

// TestLiveBreakpointByAddressAndLine: a breakpoint at a numeric address, and
// one at a file:line inside an always-inline function, planted at both
// inlined copies and hit at each.
func TestLiveBreakpointByAddressAndLine(t *testing.T) {
	la := startLive(t)
	proc, thread := la.stoppedAtMain()
	// By address: the decimal address of add (first called with i = 0).
	addr := la.symbolAddress(thread, "add")
	m := la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "addr", "Location": strconv.FormatUint(addr, 10)})
	if inst, _ := la.statusOf(m, "addr"); len(inst) != 1 || num(inst[0]["Address"]) != addr {
		t.Fatalf("address breakpoint status %v", inst)
	}
	if pc, reason, _ := la.resume(thread, 0); pc != addr || reason != "Breakpoint" {
		t.Errorf("address breakpoint: stop at %#x (%q), want %#x", pc, reason, addr)
	}
	la.ok("Breakpoints", "remove", []string{"addr"})

	line := sourceLine(t, "agent_prog.c", "AGENT_TWICE_LINE")
	m = la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "line", "File": "agent_prog.c", "Line": line})
	inst, _ := la.statusOf(m, "line")
	if len(inst) != 2 {
		t.Fatalf("file:line in an inlined function: %d instances, want 2 (%v)", len(inst), inst)
	}
	var e error
	var areas []map[string]any
	la.decode("LineNumbers", "mapToMemory", []any{proc, "agent_prog.c", line, 0}, &e, &areas)
	if len(areas) != 2 {
		t.Errorf("mapToMemory gives %d areas, want the 2 inlined copies", len(areas))
	}
	// twice(1), twice(2) in the loop, then twice(total) after it.
	seen := map[uint64]bool{}
	for i := 0; i < 3; i++ {
		pc, reason, params := la.resume(thread, 0)
		if reason != "Breakpoint" || !slices.Equal(anyStrings(params["BPs"]), []string{"line"}) {
			t.Fatalf("hit %d: %q %v", i, reason, params)
		}
		if _, l := la.lineAt(thread, pc); l != line {
			t.Errorf("hit %d at line %d", i, l)
		}
		seen[pc] = true
	}
	if len(seen) != 2 {
		t.Errorf("hits at %d distinct addresses, want both copies", len(seen))
	}
	m = la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	if code := la.exitCode(m, proc); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestLiveWatchpointByExpression: a watchpoint's Location may name the data
// as a client writes it — a variable, its address, an element — and without
// a Size property it watches the data's own size.
func TestLiveWatchpointByExpression(t *testing.T) {
	testprog.RequireHardwareDebug(t)
	la := startLive(t)
	proc, thread := la.stoppedAtMain()
	var e error
	var symID string
	la.decode("Symbols", "find", []any{thread, 0, "agent_counter"}, &e, &symID)
	var sym map[string]any
	la.decode("Symbols", "getContext", []any{symID}, &e, &sym)
	counter := num(sym["Address"])
	la.decode("Symbols", "find", []any{thread, 0, "agent_buf"}, &e, &symID)
	la.decode("Symbols", "getContext", []any{symID}, &e, &sym)
	buf := num(sym["Address"])
	for _, c := range []struct {
		loc        string
		addr, size uint64
	}{
		{"agent_counter", counter, 4},
		{"&agent_counter", counter, 4},
		{"agent_buf[6]", buf + 6, 1},
		{"&agent_buf[8]", buf + 8, 1},
	} {
		m := la.events.mark()
		la.ok("Breakpoints", "add", map[string]any{"ID": c.loc, "Location": c.loc, "AccessMode": 2})
		inst, _ := la.statusOf(m, c.loc)
		if len(inst) != 1 || inst[0]["Error"] != nil || num(inst[0]["Address"]) != c.addr || num(inst[0]["Size"]) != c.size {
			t.Errorf("watchpoint %q: %v, want address %#x size %d", c.loc, inst, c.addr, c.size)
		}
		la.ok("Breakpoints", "remove", []string{c.loc})
	}
	m := la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "bad", "Location": "no_such_variable", "AccessMode": 2})
	if inst, _ := la.statusOf(m, "bad"); len(inst) != 1 || inst[0]["Error"] == nil {
		t.Errorf("watchpoint on an unknown name: %v, want an error", inst)
	}
	la.ok("Breakpoints", "add", map[string]any{"ID": "w", "Location": "agent_counter", "AccessMode": 2})
	pc, reason, params := la.resume(thread, 0)
	if reason != "Watchpoint" || !slices.Equal(anyStrings(params["BPs"]), []string{"w"}) {
		t.Errorf("stop %q %v in %q", reason, params, la.funcAt(thread, pc))
	}
	la.ok("Breakpoints", "remove", []string{"w", "bad"})
	la.runToExit(thread, proc)
}
