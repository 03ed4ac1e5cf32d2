package services_test

import (
	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"

	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// stepStop is where one step ended: the source line and the pc relative to
// main (so that runs with different load addresses compare).
type stepStop struct {
	Line     int
	FromMain int64
	Command  string
	Function string
}

func (s stepStop) String() string {
	return fmt.Sprintf("%s -> line %d main%+d", s.Command, s.Line, s.FromMain)
}

// stepScript is the sequence compared with gdb, from a stop at add's entry:
// gdb's command and the TCF resume mode that means the same.
type stepCmd struct {
	gdb  string
	mode int
}

var stepScript = []stepCmd{
	{"finish", 5}, {"next", 3}, {"next", 3}, {"next", 3}, {"next", 3},
	{"step", 4}, {"step", 4}, {"step", 4}, {"step", 4}, {"finish", 5},
	{"next", 3}, {"next", 3}, {"stepi", 2}, {"nexti", 1}, {"finish", 5},
	{"next", 3}, {"next", 3},
}

// stepStart is where a step comparison begins: at the entry of function fn
// (gdb: break *fn), and then, with signal set, at the next stop for a
// signal (gdb: continue).
type stepStart struct {
	fn     string
	signal bool
}

// gdbSteps runs stepScript under gdb from start and reports each stop.
func gdbSteps(t *testing.T, prog string, start stepStart, stepScript []stepCmd) []stepStop {
	t.Helper()
	gdbtest.Need(t)
	var py strings.Builder
	py.WriteString("import gdb\n")
	fmt.Fprintf(&py, "gdb.execute('break *%s')\ngdb.execute('run')\ngdb.execute('delete')\n", start.fn)
	if start.signal {
		py.WriteString("gdb.execute('continue')\n")
	}
	py.WriteString("main = int(gdb.parse_and_eval('(long)&main'))\n")
	for _, s := range stepScript {
		fmt.Fprintf(&py, "try:\n    gdb.execute(%q, to_string=True)\n", s.gdb)
		py.WriteString("    f = gdb.newest_frame()\n")
		py.WriteString("    print('STOP %d %d' % (f.find_sal().line, int(f.pc()) - main))\n")
		py.WriteString("except Exception as e:\n    print('STOP-ERR', e)\n")
	}
	out := gdbtest.Batch(t, "-ex", "source "+gdbtest.Script(t, "steps.py", py.String()), prog)
	re := regexp.MustCompile(`(?m)^STOP(-ERR)? ?(-?\d+)? ?(-?\d+)?.*$`)
	var stops []stepStop
	for i, m := range re.FindAllStringSubmatch(string(out), -1) {
		if m[1] != "" {
			t.Fatalf("gdb step %d failed: %s\n%s", i, m[0], out)
		}
		line, _ := strconv.Atoi(m[2])
		off, _ := strconv.ParseInt(m[3], 10, 64)
		stops = append(stops, stepStop{Line: line, FromMain: off, Command: stepScript[i].gdb})
	}
	if len(stops) != len(stepScript) {
		t.Fatalf("gdb reported %d stops for %d steps:\n%s", len(stops), len(stepScript), out)
	}
	return stops
}

// TestLiveRangeStepping: resume modes 12 and 13 step until the pc leaves
// [RangeStart, RangeEnd).
func TestLiveRangeStepping(t *testing.T) {
	la := startLive(t)
	_, thread := la.stoppedAtMain()
	la.ok("Breakpoints", "add", map[string]any{"ID": "c", "Location": "compute"})
	pc, _, _ := la.resume(thread, 0)
	la.ok("Breakpoints", "remove", []string{"c"})
	for _, mode := range []int{12, 13} {
		m := la.events.mark()
		lo, hi := pc, pc+6
		la.ok("RunControl", "resume", thread, mode, 1, map[string]any{"RangeStart": lo, "RangeEnd": hi})
		var reason string
		pc, reason, _, _ = la.suspended(m, thread)
		if reason != "Step" || (pc >= lo && pc < hi) {
			t.Errorf("mode %d over [%#x,%#x): stopped at %#x (%q)", mode, lo, hi, pc, reason)
		}
	}
	var e error
	la.call("RunControl", "resume", thread, 12, 1, map[string]any{"RangeStart": 10, "RangeEnd": 5}).Decode(&e)
	if errCode(t, e) == 0 {
		t.Errorf("empty range accepted")
	}
	la.call("RunControl", "resume", thread, 7, 1).Decode(&e)
	if errCode(t, e) == 0 {
		t.Errorf("reverse step (mode 7) accepted")
	}
}

// TestLiveSteppingMatchesGdb runs the same steps through RunControl.resume
// (step over/into line, step out, instruction steps) and compares where each
// stops with gdb's next/step/finish/stepi/nexti on the same program.
func TestLiveSteppingMatchesGdb(t *testing.T) {
	for _, opt := range []string{"-O0", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			prog := testprog.Build(t, testprog.Spec{Sources: []string{"agent_prog.c"}, Flags: []string{opt}, Name: "agent_prog" + opt})
			script := stepScript
			if opt == "-O2" {
				// The optimized loop is shorter: stay inside the program.
				script = []stepCmd{{"finish", 5}, {"next", 3}, {"next", 3}, {"step", 4}, {"step", 4},
					{"step", 4}, {"step", 4}, {"finish", 5}, {"next", 3}, {"next", 3}}
			}
			stepsMatchGdb(t, prog, stepStart{fn: "add"}, script)
		})
	}
}

// TestLiveSteppingEdgesMatchGdb compares line steps with gdb's where they
// leave the lines of the stepping function: over a call into code without
// line information and out of such code, into a function written on one line, into the C
// library through a PLT stub not bound yet, through C++ constructors,
// virtual calls, templates and overloads, and through a
// signal handler — from the signal's stop into the handler, and from the
// handler back through the kernel's trampoline to the interrupted code.
func TestLiveSteppingEdgesMatchGdb(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"step_cases.c"}, Flags: []string{"-O0"}})
	cases := []struct {
		name   string
		start  stepStart
		script []stepCmd
	}{
		{"nolines-oneline", stepStart{fn: "start_here"}, []stepCmd{
			{"step", 4}, {"step", 4}, {"step", 4}, {"step", 4}, {"next", 3}, {"next", 3}, {"next", 3}}},
		{"over-nolines", stepStart{fn: "start_here"}, []stepCmd{
			{"next", 3}, {"next", 3}, {"next", 3}, {"stepi", 2}, {"finish", 5}}},
		{"from-nolines", stepStart{fn: "nolines"}, []stepCmd{{"next", 3}, {"next", 3}}},
		{"into-from-nolines", stepStart{fn: "nolines"}, []stepCmd{{"step", 4}, {"step", 4}}},
		{"into-libc", stepStart{fn: "start_here"}, []stepCmd{
			{"finish", 5}, {"next", 3}, {"step", 4}, {"step", 4}, {"step", 4}, {"finish", 5}, {"finish", 5}, {"next", 3}}},
		{"signal-next", stepStart{fn: "start_here", signal: true}, []stepCmd{
			{"next", 3}, {"next", 3}, {"next", 3}, {"next", 3}, {"next", 3}}},
		{"signal-step", stepStart{fn: "start_here", signal: true}, []stepCmd{
			{"step", 4}, {"step", 4}, {"step", 4}, {"step", 4}, {"step", 4}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { stepsMatchGdb(t, prog, c.start, c.script) })
	}
	t.Run("cxx", func(t *testing.T) {
		prog := testprog.Build(t, testprog.Spec{Sources: []string{"step_cxx.cc"}, Flags: []string{"-O0"}})
		stepsMatchGdb(t, prog, stepStart{fn: "ns::Square::Square"}, []stepCmd{
			{"finish", 5}, {"next", 3}, {"step", 4}, {"step", 4}, {"next", 3}, {"step", 4}, {"step", 4}, {"finish", 5},
			{"next", 3}, {"step", 4}, {"step", 4}, {"step", 4}, {"next", 3}, {"next", 3}, {"step", 4}, {"step", 4}})
	})
}

func stepsMatchGdb(t *testing.T, prog string, start stepStart, stepScript []stepCmd) {
	want := gdbSteps(t, prog, start, stepScript)
	la := startLive(t)
	m := la.events.mark()
	proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	mainPC, reason, _, _ := la.suspended(m, thread)
	if reason != "Suspended" {
		t.Fatalf("first stop %q", reason)
	}
	la.ok("Breakpoints", "add", map[string]any{"ID": "at-start", "Location": start.fn})
	if _, reason, _ = la.resume(thread, 0); reason != "Breakpoint" {
		t.Fatalf("no stop at %s: %q", start.fn, reason)
	}
	la.ok("Breakpoints", "remove", []string{"at-start"})
	if start.signal {
		if _, reason, _ = la.resume(thread, 0); reason != "Signal 10" {
			t.Fatalf("running on to the signal: stopped with %q", reason)
		}
	}
	var got []stepStop
	for _, s := range stepScript {
		m := la.events.mark()
		la.ok("RunControl", "resume", thread, s.mode, 1)
		pc, reason, params, _ := la.suspended(m, thread)
		if reason != "Step" {
			t.Errorf("%s: reason %q params %v, want Step", s.gdb, reason, params)
		}
		line := la.shownLine(thread, pc)
		got = append(got, stepStop{Line: line, FromMain: int64(pc - mainPC), Command: s.gdb})
		// Exactly one resumed and one suspended event per step.
		evs := la.events.since(m)
		if n := len(names(evs, func(e event) bool { return e.Service == "RunControl" })); n != 2 {
			t.Errorf("%s: %d RunControl events, want contextResumed + contextSuspended:\n%s", s.gdb, n, dump(evs))
		}
	}
	for i := range want {
		outside := func(s stepStop) bool { return s.FromMain > 1<<32 || s.FromMain < -(1<<32) }
		switch {
		case outside(got[i]) && outside(want[i]):
			// In a library: load addresses differ (gdb runs without ASLR).
			if got[i].Line != want[i].Line {
				t.Errorf("step %d: sonde %v, gdb %v", i, got[i], want[i])
			}
		case got[i].FromMain != want[i].FromMain || got[i].Line != want[i].Line:
			// Lines too: at the first address of an inlined call gdb shows
			// the caller's line (the call) until a step into enters it.
			t.Errorf("step %d: sonde %v, gdb %v", i, got[i], want[i])
		}
	}
	if t.Failed() {
		t.Logf("sonde: %v\ngdb:   %v", got, want)
	}
}

// shownLine is the line of the thread's top frame as a TCF client shows it:
// the frame's CodeArea when it has one (a stop at the entry of inlined calls
// shown in the caller, at the line of the call), else the line table's line
// at pc (LineNumbers.mapToSource).
func (la *liveAgent) shownLine(thread string, pc uint64) int {
	la.t.Helper()
	var e error
	var frames []struct {
		IP       uint64
		CodeArea *struct{ SLine int }
	}
	la.decode("StackTrace", "getContext", []any{la.topFrames(thread, 1)}, &frames, &e)
	if len(frames) == 1 && frames[0].IP == pc && frames[0].CodeArea != nil {
		return frames[0].CodeArea.SLine
	}
	_, line := la.lineAt(thread, pc)
	return line
}

// TestLiveInlineBreakpointLineMatchesGdb: a breakpoint at a function whose
// first instruction begins an inlined call (-O2 C++) shows the line gdb
// shows: set on the function (SkipPrologue, gdb's break FUNCTION) the
// function's, at its address (gdb's break *FUNCTION) the inlined call's.
func TestLiveInlineBreakpointLineMatchesGdb(t *testing.T) {
	gdbtest.Need(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"step_inline.cc"}, Flags: []string{"-O2", "-no-pie"}, Name: "step_inline_cc"})
	for _, c := range []struct {
		gdb  string
		skip bool
	}{{"run", true}, {"*run", false}} {
		out, err := gdbtest.Run("-ex", "break "+c.gdb, "-ex", "run",
			"-ex", "python print('LINE %d' % gdb.newest_frame().find_sal().line)", prog)
		m := regexp.MustCompile(`(?m)^LINE (\d+)$`).FindSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("gdb: %v\n%s", err, out)
		}
		want, _ := strconv.Atoi(string(m[1]))
		la := startLive(t)
		mk := la.events.mark()
		proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
		thread := mainThread(proc)
		la.suspended(mk, thread)
		la.ok("Breakpoints", "add", map[string]any{"ID": "b", "Location": "run", "SkipPrologue": c.skip})
		pc, reason, _ := la.resume(thread, 0)
		if reason != "Breakpoint" {
			t.Fatalf("break %s: stopped with %q", c.gdb, reason)
		}
		if got := la.shownLine(thread, pc); got != want {
			t.Errorf("break %s: line %d, gdb %d", c.gdb, got, want)
		}
	}
}
