package services_test

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// probeCond is the condition the probe tests use: locals or parameters and
// globals of several sizes and signedness, && and ||, a negated constant.
const probeCond = `(i == 5 || i >= 995 && k != 6979) && gate == 3 && small == -2 || !i`

// gdbStops runs prog under gdb with a conditional breakpoint on work and
// returns the i of every stop.
func gdbStops(t *testing.T, prog, cond string) []int {
	t.Helper()
	gdbtest.Need(t)
	cmds := "break work if " + cond + "\ncommands\nsilent\nprintf \"stop i=%d\\n\", i\ncontinue\nend\nrun\n"
	out := gdbtest.Batch(t, "-x", gdbtest.Script(t, "cmds.gdb", cmds), "--args", prog, "1000")
	var is []int
	for _, m := range regexp.MustCompile(`stop i=(-?\d+)`).FindAllStringSubmatch(string(out), -1) {
		n, _ := strconv.Atoi(m[1])
		is = append(is, n)
	}
	return is
}

// TestLiveBreakpointProbe: a conditional breakpoint on a function called in
// a tight loop is planted as a probe with the condition compiled in (its
// status says "Probe": true) and stops exactly where gdb stops for the same
// condition, each stop at the function's address with the right i; a
// breakpoint whose condition cannot be compiled falls back to an int3
// (ProbeFallback says why) and still stops at the same places. At -O2 the
// parameters are registers at the entry; at -O0, after the prologue
// (SkipPrologue, as gdb), they are in the frame.
func TestLiveBreakpointProbe(t *testing.T) {
	for _, tc := range []struct {
		opt  string
		cond string
		skip bool
		want bool // planted as a probe
	}{
		{"-O2", probeCond, false, true},
		{"-O0", probeCond, true, true},
		{"-O0", "(i % 200 == 5) || i > 996", true, false}, // arithmetic: not compiled
	} {
		t.Run(tc.opt+"/"+tc.cond, func(t *testing.T) {
			prog := testprog.Build(t, testprog.Spec{Sources: []string{"bp_probe.c"}, Flags: []string{tc.opt, "-g"}, Name: "bp_probe" + tc.opt})
			want := gdbStops(t, prog, tc.cond)
			if len(want) < 3 {
				t.Fatalf("gdb stopped %d times: %v", len(want), want)
			}
			la := startLive(t)
			m0 := la.events.mark()
			proc, _ := la.startProcess(prog, []string{"1000"}, map[string]any{"StopAtEntry": false, "StopAtMain": true})
			thread := mainThread(proc)
			la.suspended(m0, thread)
			la.ok("Breakpoints", "add", map[string]any{"ID": "bp-work", "Enabled": true, "Location": "work",
				"Condition": tc.cond, "SkipPrologue": tc.skip})
			var e error
			var st map[string]any
			la.decode("Breakpoints", "getStatus", []any{"bp-work"}, &e, &st)
			inst, _ := st["Instances"].([]any)
			if len(inst) != 1 {
				t.Fatalf("status %v", st)
			}
			i0, _ := inst[0].(map[string]any)
			addr := num(i0["Address"])
			if probe, _ := i0["Probe"].(bool); probe != tc.want {
				t.Fatalf("status %v: Probe %v, want %v", i0, probe, tc.want)
			}
			if !tc.want && i0["ProbeFallback"] == nil {
				t.Errorf("status %v: no ProbeFallback", i0)
			}
			var got []int
			for {
				m := la.events.mark()
				la.ok("RunControl", "resume", thread, 0, 1)
				ev, _ := la.events.wait(t, m, "a stop or the exit", func(ev event) bool {
					return is("RunControl", "contextSuspended", thread)(ev) || is("Processes", "exited", proc)(ev)
				})
				if ev.Name != "contextSuspended" {
					break
				}
				pc, reason, params, _ := la.suspended(m, thread)
				if reason != "Breakpoint" || !slices.Equal(anyStrings(params["BPs"]), []string{"bp-work"}) || pc != addr {
					t.Fatalf("stop %q %v at %#x, want bp-work at %#x", reason, params, pc, addr)
				}
				frames := la.topFrames(thread, 2)
				if len(frames) < 2 || la.funcAt(thread, pc) != "work" {
					t.Fatalf("stop at %#x: frames %v, function %q", pc, frames, la.funcAt(thread, pc))
				}
				var props map[string]any
				la.decode("Expressions", "create", []any{frames[0], nil, "i"}, &e, &props)
				var val []byte
				var vprops map[string]any
				if err := la.call("Expressions", "evaluate", props["ID"]).Decode(&val, &e, &vprops); err != nil || e != nil {
					t.Fatalf("evaluate i: %v %v", err, e)
				}
				var v int32
				for k := 3; k >= 0 && k < len(val); k-- {
					v = v<<8 | int32(val[k])
				}
				got = append(got, int(v))
				if len(got) > len(want)+2 {
					t.Fatalf("stops %v, gdb %v", got, want)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("stopped at i = %v; gdb at %v", got, want)
			}
			la.decode("Breakpoints", "getStatus", []any{"bp-work"}, &e, &st)
			if inst, _ := st["Instances"].([]any); len(inst) == 1 {
				if h := num(inst[0].(map[string]any)["HitCount"]); h != uint64(len(want)) {
					t.Errorf("HitCount %d, want %d", h, len(want))
				}
			}
		})
	}
}

// TestLiveDPrintfProbe: dynamic printfs whose arguments are variables the
// payload can record are planted as recording probes: every hit where the
// condition holds prints, in the order of the hits, formatted in the agent
// from the ring buffer, and the program never stops (no contextSuspended)
// — one of them on all 1000 calls of a tight loop.
func TestLiveDPrintfProbe(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"bp_probe.c"}, Flags: []string{"-O2", "-g"}, Name: "bp_probe-O2"})
	la := startLive(t)
	var e error
	var sid string
	la.decode("DPrintf", "open", []any{nil}, &e, &sid)
	la.ok("Streams", "connect", sid)
	m0 := la.events.mark()
	proc, _ := la.startProcess(prog, []string{"1000"}, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	la.suspended(m0, thread)
	la.ok("Breakpoints", "set", []map[string]any{
		{"ID": "dp-some", "Enabled": true, "Location": "work",
			"Condition": `(i < 3 || i == 999) && $printf("some i=%d k=%ld gate=%d small=%hd %s %c\n", i, k, gate, small, "lit", 'x')`},
		{"ID": "dp-all", "Enabled": true, "Location": "twice", "Condition": `$printf("all %d\n", i)`},
	})
	for _, id := range []string{"dp-some", "dp-all"} {
		var st map[string]any
		la.decode("Breakpoints", "getStatus", []any{id}, &e, &st)
		inst, _ := st["Instances"].([]any)
		if len(inst) != 1 || inst[0].(map[string]any)["Probe"] != true {
			t.Fatalf("%s: status %v, want a probe", id, st)
		}
	}
	m1 := la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	la.events.wait(t, m1, "Processes.exited", is("Processes", "exited", proc))
	for _, ev := range la.events.since(m1) {
		if ev.Service == "RunControl" && ev.Name == "contextSuspended" {
			t.Errorf("a dynamic printf stopped the program: %v", ev)
		}
	}
	var some, all []string
	var got strings.Builder
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var data []byte
		var lost uint64
		var eos bool
		la.decode("Streams", "read", []any{sid, 1 << 16}, &data, &e, &lost, &eos)
		got.Write(data)
		if strings.Count(got.String(), "\n") >= 1004 || eos {
			break
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(got.String(), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "some "):
			some = append(some, line)
		case strings.HasPrefix(line, "all "):
			all = append(all, line)
		default:
			t.Errorf("line %q", line)
		}
	}
	wantSome := []string{
		"some i=0 k=0 gate=3 small=-2 lit x",
		"some i=1 k=7 gate=3 small=-2 lit x",
		"some i=2 k=14 gate=3 small=-2 lit x",
		"some i=999 k=6993 gate=3 small=-2 lit x",
	}
	if !slices.Equal(some, wantSome) {
		t.Errorf("dp-some printed %q, want %q", some, wantSome)
	}
	if len(all) != 1000 {
		t.Fatalf("dp-all printed %d lines, want 1000", len(all))
	}
	for i, line := range all {
		if line != fmt.Sprintf("all %d", i) {
			t.Fatalf("dp-all line %d: %q", i, line)
		}
	}
}

// TestLiveProbeChannelClose: a client attaches to a running program, plants
// a conditional breakpoint that becomes a probe (a jump into a code cache)
// and drops its channel: the probe goes, the text of the function is the
// file's again and no anonymous executable mapping (code cache, scratch
// area) is left, with the process detached and running.
func TestLiveProbeChannelClose(t *testing.T) {
	prog := agentProg(t)
	la := startLive(t)
	running := exec.Command(prog, "sleep")
	rout, _ := running.StdoutPipe()
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { running.Process.Kill(); running.Wait() })
	bufio.NewReader(rout).ReadString('\n')
	pid := running.Process.Pid
	c2 := la.second()
	c2.ok("Processes", "attach", "P"+strconv.Itoa(pid))
	m := c2.events.mark()
	c2.ok("Breakpoints", "add", map[string]any{"ID": "probe-add", "Location": "add", "Condition": "a == 12345 || b < -7"})
	if inst, _ := c2.statusOf(m, "probe-add"); len(inst) != 1 || inst[0]["Probe"] != true {
		t.Fatalf("probe-add planted as %v, want a probe", inst)
	}
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	link := symbolAddr(t, prog, "add")
	bias := exeLoadBias(t, pid, prog)
	if codeByte(t, pid, link+bias) != 0xe9 || anonExec(t, pid) == 0 {
		t.Fatalf("no jump at add (%#x) or no code cache", codeByte(t, pid, link+bias))
	}
	c2.c.Close()
	eventually(t, "probe removed, cache freed, process released", func() (bool, string) {
		if tp := tracerPid(t, pid); tp != 0 {
			return false, fmt.Sprintf("traced by %d", tp)
		}
		for k := uint64(0); k < 8; k++ {
			if got, want := codeByte(t, pid, link+bias+k), fileByte(t, f, link+k); got != want {
				return false, fmt.Sprintf("byte %d of add is %#x, the file has %#x", k, got, want)
			}
		}
		if n := anonExec(t, pid); n != 0 {
			return false, fmt.Sprintf("%d anonymous executable mappings", n)
		}
		return true, ""
	})
}

// TestLiveBreakpointProbeTemporaryIgnore: IgnoreCount and Temporary work on
// a breakpoint planted as a probe: the first holding hits are skipped (and
// counted), the stop after them removes the breakpoint, its probe and code
// cache (the function's bytes are the file's again) and the program runs
// to its end from the stop.
func TestLiveBreakpointProbeTemporaryIgnore(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"bp_probe.c"}, Flags: []string{"-O2", "-g"}, Name: "bp_probe-O2"})
	la := startLive(t)
	m0 := la.events.mark()
	proc, _ := la.startProcess(prog, []string{"1000"}, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	la.suspended(m0, thread)
	la.ok("Breakpoints", "add", map[string]any{"ID": "tmp", "Location": "work", "Condition": "i >= 500 && k > 0",
		"IgnoreCount": 2, "Temporary": true})
	var e error
	var st map[string]any
	la.decode("Breakpoints", "getStatus", []any{"tmp"}, &e, &st)
	inst, _ := st["Instances"].([]any)
	if len(inst) != 1 || inst[0].(map[string]any)["Probe"] != true {
		t.Fatalf("status %v, want a probe", st)
	}
	addr := num(inst[0].(map[string]any)["Address"])
	pc, reason, params := la.resume(thread, 0)
	if reason != "Breakpoint" || pc != addr || !slices.Equal(anyStrings(params["BPs"]), []string{"tmp"}) {
		t.Fatalf("stop %q %v at %#x, want tmp at %#x", reason, params, pc, addr)
	}
	frames := la.topFrames(thread, 1)
	var props map[string]any
	la.decode("Expressions", "create", []any{frames[0], nil, "i"}, &e, &props)
	var val []byte
	var vprops map[string]any
	if err := la.call("Expressions", "evaluate", props["ID"]).Decode(&val, &e, &vprops); err != nil || e != nil || len(val) < 2 || int(val[0])|int(val[1])<<8 != 502 {
		t.Fatalf("i = %v (%v %v), want 502 (500 and 501 ignored)", val, err, e)
	}
	var ids []string
	la.decode("Breakpoints", "getIDs", []any{}, &e, &ids)
	if slices.Contains(ids, "tmp") {
		t.Errorf("the Temporary breakpoint is still there: %v", ids)
	}
	pid := pidOf(proc)
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	link := symbolAddr(t, prog, "work")
	for k := uint64(0); k < 8; k++ {
		if got, want := codeByte(t, pid, addr+k), fileByte(t, f, link+k); got != want {
			t.Errorf("byte %d of work is %#x after the Temporary stop, the file has %#x", k, got, want)
		}
	}
	if n := anonExec(t, pid); n > 1 { // the displaced-stepping scratch area may stay until detach
		t.Errorf("%d anonymous executable mappings: the code cache was not freed", n)
	}
	if code := la.runToExit(thread, proc); code != 0 {
		t.Errorf("exit code %d", code)
	}
}
