package services_test

import (
	"encoding/binary"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/tcf/client"
)

// eclipseStep runs one command as Eclipse's proxy for it would, checking the
// reply has the proxy's field count (Java asserts it) and no error report in
// its error field. The result's fields are decoded into dst (in order,
// skipping the error field).
func eclipseStep(t *testing.T, la *liveAgent, fields, errAt int, service, cmd string, args []any, dst ...any) *client.Result {
	t.Helper()
	r := la.call(service, cmd, args...)
	if len(r.Fields) != fields {
		t.Errorf("%s.%s: %d reply fields, Eclipse's proxy expects %d: %q", service, cmd, len(r.Fields), fields, r.Raw())
		return r
	}
	ptrs := make([]any, fields)
	var e error
	k := 0
	for i := range ptrs {
		if i == errAt {
			ptrs[i] = &e
			continue
		}
		if k < len(dst) {
			ptrs[i] = dst[k]
			k++
		} else {
			var discard json.RawMessage
			ptrs[i] = &discard
		}
	}
	if err := r.Decode(ptrs...); err != nil {
		t.Errorf("%s.%s reply %q: %v", service, cmd, r.Raw(), err)
	} else if e != nil {
		t.Errorf("%s.%s failed (Eclipse would end the launch): %v", service, cmd, e)
	}
	return r
}

// TestLiveEclipseLaunchSequence replays, in order, the commands Eclipse's
// TCFLaunch sends when it launches a program for debugging with its default
// settings (stop at entry, stop at main, a terminal), a breakpoint already
// set in the workspace and the DPrintf stream open, then the commands its
// Debug, Variables, Registers, Memory and Disassembly views send at the
// stops. Every command must succeed with the reply layout Eclipse's proxies
// assert, the program must stop at its entry and then at main, and the
// breakpoint's frame must show its variables.
func TestLiveEclipseLaunchSequence(t *testing.T) {
	prog := disProg(t)
	la := startLive(t)
	var rules []map[string]any
	// 1. PathMap: read the target's rules, then set them with the launch's.
	eclipseStep(t, la, 2, 0, "PathMap", "get", nil, &rules)
	rules = append(rules, map[string]any{"ID": "eclipse-1", "Source": "/workspace/src", "Destination": "/tmp/src"})
	eclipseStep(t, la, 1, 0, "PathMap", "set", []any{rules})
	// 2. Streams: subscribe to the four types Eclipse listens to.
	for _, typ := range []string{"Processes", "ProcessesV1", "UART-RX", "UART-TX"} {
		eclipseStep(t, la, 1, 0, "Streams", "subscribe", []any{typ})
	}
	// 3. Breakpoints: capabilities, then every workspace breakpoint (a line
	// breakpoint with the attributes TCFBreakpointsModel sends).
	var caps map[string]any
	eclipseStep(t, la, 2, 0, "Breakpoints", "getCapabilities", []any{nil}, &caps)
	if caps["File"] != true || caps["Line"] != true || caps["Condition"] != true {
		t.Errorf("breakpoint capabilities %v", caps)
	}
	step := sourceLine(t, "dis_svc_prog.c", "DIS_STEP_LINE")
	eclipseStep(t, la, 1, 0, "Breakpoints", "set", []any{[]map[string]any{{
		"ID": "eclipse.bp.1", "Enabled": true, "BreakpointType": "Software", "File": "dis_svc_prog.c",
		"Line": step, "Location": "dis_svc_prog.c:" + strconv.Itoa(step), "IgnoreCount": 0,
		"ClientData": map[string]any{"Marker": "org.eclipse.cdt.debug.core.cLineBreakpointMarker"},
	}}})
	// 4. DPrintf: open the stream and connect to it.
	var sid string
	eclipseStep(t, la, 2, 0, "DPrintf", "open", []any{nil}, &sid)
	eclipseStep(t, la, 1, 0, "Streams", "connect", []any{sid})
	// 5. Processes: the environment, V1 capabilities, start, signal list.
	var env []string
	eclipseStep(t, la, 2, 0, "Processes", "getEnvironment", nil, &env)
	if len(env) == 0 || !strings.Contains(strings.Join(env, "\n"), "PATH=") {
		t.Errorf("environment %v", env)
	}
	var pcaps map[string]any
	eclipseStep(t, la, 2, 0, "ProcessesV1", "getCapabilities", []any{nil}, &pcaps)
	m0 := la.events.mark()
	var pctx map[string]any
	eclipseStep(t, la, 2, 0, "ProcessesV1", "start", []any{"", prog, []string{prog, "2"}, env, map[string]any{
		"Attach": true, "AttachChildren": true, "StopAtEntry": true, "StopAtMain": true, "UseTerminal": true,
	}}, &pctx)
	proc, _ := pctx["ID"].(string)
	if proc == "" {
		t.Fatalf("start gave no process: %v", pctx)
	}
	thread := mainThread(proc)
	var sigs []map[string]any
	eclipseStep(t, la, 2, 0, "Processes", "getSignalList", []any{proc}, &sigs)
	if len(sigs) < 31 {
		t.Errorf("signal list has %d entries", len(sigs))
	}

	// The entry stop, then (the user resumes) the stop at main.
	pc, _, _, next := la.suspended(m0, thread)
	if fn := la.funcAt(thread, pc); fn == "main" {
		t.Errorf("first stop is already in main: StopAtEntry ignored")
	}
	eclipseStep(t, la, 1, 0, "RunControl", "resume", []any{thread, 0, 1})
	pc, reason, _, _ := la.suspended(next, thread)
	if fn := la.funcAt(thread, pc); fn != "main" {
		t.Fatalf("second stop at 0x%x in %q (%s), want main", pc, fn, reason)
	}
	eclipseViews(t, la, proc, thread, pc)

	// The workspace breakpoint: variables of its frame.
	m1 := la.events.mark()
	eclipseStep(t, la, 1, 0, "RunControl", "resume", []any{thread, 0, 1})
	pc, reason, params, _ := la.suspended(m1, thread)
	if reason != "Breakpoint" || !slices.Equal(anyStrings(params["BPs"]), []string{"eclipse.bp.1"}) {
		t.Fatalf("stop after main: %q %v, want the workspace breakpoint", reason, params)
	}
	frame := eclipseViews(t, la, proc, thread, pc)
	var locals []string
	eclipseStep(t, la, 2, 0, "Expressions", "getChildren", []any{frame}, &locals)
	names := map[string]uint64{}
	for _, id := range locals {
		var props map[string]any
		eclipseStep(t, la, 2, 0, "Expressions", "getContext", []any{id}, &props)
		var val []byte
		eclipseStep(t, la, 3, 1, "Expressions", "evaluate", []any{id}, &val)
		var w [8]byte
		copy(w[:], val)
		name, _ := props["Expression"].(string)
		if name == "" {
			name, _ = props["Name"].(string)
		}
		names[name] = binary.LittleEndian.Uint64(w[:])
	}
	if v, ok := names["i"]; !ok || v != 0 {
		t.Errorf("variables of dis_step: %v, want i = 0 among them", names)
	}
	if _, ok := names["tag"]; !ok {
		t.Errorf("variables of dis_step: %v, want tag", names)
	}
}

// eclipseViews sends what Eclipse's views ask at a stop and returns the top
// frame's ID.
func eclipseViews(t *testing.T, la *liveAgent, proc, thread string, pc uint64) string {
	t.Helper()
	var roots, threads []string
	eclipseStep(t, la, 2, 0, "RunControl", "getChildren", []any{nil}, &roots)
	eclipseStep(t, la, 2, 0, "RunControl", "getChildren", []any{proc}, &threads)
	if !slices.Contains(roots, proc) || !slices.Contains(threads, thread) {
		t.Errorf("contexts %v / %v", roots, threads)
	}
	var rc map[string]any
	eclipseStep(t, la, 2, 0, "RunControl", "getContext", []any{thread}, &rc)
	var susp bool
	var statePC uint64
	eclipseStep(t, la, 4, 0, "RunControl", "getMinState", []any{thread}, &susp)
	if !susp {
		t.Errorf("getMinState: not suspended")
	}
	eclipseStep(t, la, 5, 0, "RunControl", "getState", []any{thread}, &susp, &statePC)
	if !susp || statePC != pc {
		t.Errorf("getState: suspended %v pc 0x%x, want 0x%x", susp, statePC, pc)
	}
	var frames []string
	eclipseStep(t, la, 2, 0, "StackTrace", "getChildrenRange", []any{thread, 0, 10}, &frames)
	if len(frames) == 0 {
		t.Fatal("no frames")
	}
	var fctx []map[string]any
	eclipseStep(t, la, 2, 1, "StackTrace", "getContext", []any{frames}, &fctx)
	var sym string
	eclipseStep(t, la, 2, 0, "Symbols", "findByAddr", []any{thread, pc}, &sym)
	var areas []map[string]any
	eclipseStep(t, la, 2, 0, "LineNumbers", "mapToSource", []any{thread, pc, pc + 1}, &areas)
	var regs []string
	eclipseStep(t, la, 2, 0, "Registers", "getChildren", []any{thread}, &regs)
	if len(regs) < 17 {
		t.Fatalf("registers %v", regs)
	}
	var rip map[string]any
	ripID := ""
	for _, id := range regs {
		eclipseStep(t, la, 2, 0, "Registers", "getContext", []any{id}, &rip)
		if rip["Name"] == "rip" {
			ripID = id
			break
		}
	}
	var v []byte
	eclipseStep(t, la, 2, 0, "Registers", "getm", []any{[][]any{{ripID, 0, 8}}}, &v)
	if len(v) != 8 || binary.LittleEndian.Uint64(v) != pc {
		t.Errorf("getm rip: % x, want 0x%x", v, pc)
	}
	var mem []byte
	eclipseStep(t, la, 3, 1, "Memory", "get", []any{proc, pc, 1, 16, 0}, &mem)
	var lines []map[string]any
	eclipseStep(t, la, 2, 0, "Disassembly", "disassemble", []any{thread, pc, 64, map[string]any{}}, &lines)
	// The view lists from the address it asks for (issue 21, item 9).
	if len(lines) == 0 || num(lines[0]["Address"]) != pc {
		t.Errorf("disassembly at 0x%x does not start at the pc: %v", pc, lines)
	}
	var attrs, ids []string
	eclipseStep(t, la, 2, 0, "ContextQuery", "getAttrNames", nil, &attrs)
	eclipseStep(t, la, 2, 0, "ContextQuery", "query", []any{"pid=" + strings.TrimPrefix(proc, "P") + "/*"}, &ids)
	if !slices.Equal(ids, []string{thread}) {
		t.Errorf("query of the process's threads: %v", ids)
	}
	for _, q := range []string{`ID="` + thread + `"`, `**/ID="` + thread + `"`, `/**/ID="` + thread + `"`, `ID="` + thread + `",id="` + thread + `"`} {
		eclipseStep(t, la, 2, 0, "ContextQuery", "query", []any{q}, &ids)
		if !slices.Equal(ids, []string{thread}) {
			t.Errorf("query %s: %v", q, ids)
		}
	}
	return frames[0]
}
