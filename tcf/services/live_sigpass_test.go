package services_test

import (
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// Signal numbers of tp_dispositions' signals (x86-64 Linux).
const (
	sigHUP   = 1
	sigUSR1  = 10
	sigUSR2  = 12
	sigPIPE  = 13
	sigCHLD  = 17
	sigURG   = 23
	sigWINCH = 28
)

// quietDontStop is the C agent's default don't-stop set plus SIGURG, which
// tp_dispositions raises at its checkpoints (default action: ignore), as an
// array of signal numbers (the C agent's other form of a set).
var quietDontStop = []int{sigCHLD, sigPIPE, sigWINCH, sigURG}

// TestLiveSignalsPassHandled: with SigPassHandled (sonde's pass-if-handled
// set) a signal in it that the program catches (SIGUSR1, SIGUSR2) or ignores
// (SIGHUP) passes without a stop and reaches the program, and one that
// would kill it (SIGUSR2 back at its default) stops as "Signal 12"; without
// the set every one of them stops, as in the C agent. Set at start (arrays)
// and by setSignalMask's fourth argument (a bit mask).
func TestLiveSignalsPassHandled(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"tp_dispositions.c"}, Flags: []string{"-O0"}})
	la := startLive(t)
	handled := []int{sigUSR1, sigHUP, sigUSR2}

	// firstStop waits for proc's first stop or its exit (from mark m) and
	// returns the stop's reason ("" when it exited without one) and the exit
	// code.
	firstStop := func(m int, proc string) (reason string, code int64) {
		t.Helper()
		e, _ := la.events.wait(t, m, "a stop or the exit of "+proc, func(e event) bool {
			return is("RunControl", "contextSuspended", mainThread(proc))(e) || is("Processes", "exited", proc)(e)
		})
		if e.Name == "exited" {
			return "", la.exitCode(m, proc)
		}
		_, reason, _, _ = la.suspended(m, mainThread(proc))
		return reason, 0
	}

	t.Run("start", func(t *testing.T) {
		m := la.events.mark()
		proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": false,
			"SigDontStop": quietDontStop, "SigPassHandled": handled})
		if reason, code := firstStop(m, proc); reason != "" || code != 0 {
			t.Fatalf("stopped (%q) or exit code %d, want no stop and 0 (every handler ran once)", reason, code)
		}
		m = la.events.mark()
		proc, _ = la.startProcess(prog, []string{"usr2"}, map[string]any{"StopAtEntry": false, "StopAtMain": false,
			"SigDontStop": quietDontStop, "SigPassHandled": handled})
		thread := mainThread(proc)
		if reason, code := firstStop(m, proc); reason != "Signal 12" {
			t.Fatalf("first stop %q (exit code %d), want the fatal SIGUSR2: Signal 12", reason, code)
		}
		m = la.events.mark()
		la.ok("RunControl", "resume", thread, 0, 1)
		if code := la.exitCode(m, proc); code != -sigUSR2 {
			t.Errorf("exit code %d, want -12 (SIGUSR2 delivered)", code)
		}
	})

	t.Run("without", func(t *testing.T) {
		m := la.events.mark()
		proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": false,
			"SigDontStop": quietDontStop})
		if reason, code := firstStop(m, proc); reason != "Signal 10" {
			t.Fatalf("first stop %q (exit code %d), want the handled SIGUSR1 to stop without the set: Signal 10", reason, code)
		}
		m = la.events.mark()
		la.ok("RunControl", "terminate", proc)
		la.exitCode(m, proc)
	})

	t.Run("setSignalMask", func(t *testing.T) {
		m := la.events.mark()
		proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": true, "StopAtMain": false})
		thread := mainThread(proc)
		la.suspended(m, thread)
		var mask uint64
		for _, s := range handled {
			mask |= 1 << s
		}
		la.ok("Processes", "setSignalMask", proc, quietDontStop, nil, mask)
		var e error
		var ds, dp, pend uint64
		la.decode("Processes", "getSignalMask", []any{proc}, &e, &ds, &dp, &pend)
		if want := uint64(1<<sigCHLD | 1<<sigPIPE | 1<<sigWINCH | 1<<sigURG); ds != want || dp != 0 {
			t.Errorf("getSignalMask: dont-stop %#x dont-pass %#x, want %#x and 0", ds, dp, want)
		}
		m = la.events.mark()
		la.ok("RunControl", "resume", thread, 0, 1)
		if reason, code := firstStop(m, proc); reason != "" || code != 0 {
			t.Fatalf("stopped (%q) or exit code %d, want no stop and 0", reason, code)
		}
	})

	t.Run("bad", func(t *testing.T) {
		for _, sets := range [][]any{{[]int{0}, 0}, {[]int{65}, 0}, {"x", 0}, {0, map[string]any{}}, {0, 0, true}} {
			var e error
			if err := la.call("Processes", "setSignalMask", append([]any{"P1"}, sets...)...).Decode(&e); err != nil || e == nil {
				t.Errorf("setSignalMask %v: no error", sets)
			}
		}
		var e error
		var props map[string]any
		r := la.call("ProcessesV1", "start", "", prog, []string{prog}, nil, map[string]any{"SigPassHandled": "SIGUSR1"})
		if err := r.Decode(&e, &props); err != nil || e == nil || props != nil {
			t.Errorf("start with SigPassHandled \"SIGUSR1\": %v %v, want an error", e, props)
		}
	})
}
