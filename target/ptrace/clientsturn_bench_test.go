package ptrace

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
)

// BenchmarkInspectedStop is a debugger's step as an editor sees it: the
// thread runs to a breakpoint and is stepped four instructions, each leg
// asked for as soon as the last one stopped (as a `next` drives its legs,
// which teaches the spin policy that work follows a stop quickly); the last
// stop is reported, and the client takes a round of requests that do not
// need the tracer thread (here a 1 ms sleep: the stack, scopes and
// variables of a DAP round), then resumes. spin: the backend as the TCF
// agent uses it, waiting awake after the stop; clientsTurn: the stop is told
// to be the client's turn (target.ClientsTurn, what `sonde dap` does).
// tracer-cpu-ns/op is the tracer thread's CPU per cycle (its schedstat):
// what the spin costs the client and the adapter on a small machine.
func BenchmarkInspectedStop(b *testing.B) {
	for _, turn := range []bool{false, true} {
		name := "spin"
		if turn {
			name = "clientsTurn"
		}
		b.Run(name, func(b *testing.B) { benchInspectedStop(b, turn) })
	}
}

func benchInspectedStop(b *testing.B, turn bool) {
	path := build(b, "tp_hotloop.c")
	tg, err := New()
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	p, _, err := tg.Launch(target.LaunchOptions{Path: path, Argv: []string{path}, StopAtEntry: true, Stdio: target.StdioNull})
	if err != nil {
		b.Fatal(err)
	}
	defer testprog.OpenProc(b, p.PID()).Kill()
	th := p.Children()[0]
	if _, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: symbol(b, p, path, "tick")}); err != nil {
		b.Fatal(err)
	}
	stops := make(chan struct{}, 1)
	tg.AddListener(func(e target.Event) {
		if e.Kind == target.EventStopped && e.Context == th && e.Reason != nil &&
			(e.Reason.Kind == target.ReasonBreakpoint || e.Reason.Kind == target.ReasonStep) {
			stops <- struct{}{}
		}
	})
	run := func(mode target.ResumeMode) {
		if err := th.Resume(mode, target.ResumeOptions{}); err != nil {
			b.Fatal(err)
		}
		select {
		case <-stops:
		case <-time.After(time.Minute):
			b.Fatal("no stop in a minute")
		}
	}
	tracer := tg.Backend().(*Backend).tracerTid
	b.ResetTimer()
	cpu0 := taskCPU(b, tracer)
	for i := 0; i < b.N; i++ {
		run(target.ResumeContinue)
		for leg := 0; leg < 4; leg++ {
			run(target.ResumeStepInto)
		}
		if turn {
			tg.ClientsTurn() // the last stop is reported
		}
		time.Sleep(time.Millisecond) // the client's round
	}
	b.StopTimer()
	b.ReportMetric(float64(taskCPU(b, tracer)-cpu0)/float64(b.N), "tracer-cpu-ns/op")
}

// taskCPU is thread tid's CPU time in ns (schedstat's first field).
func taskCPU(b *testing.B, tid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/schedstat", tid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		b.Fatalf("schedstat of thread %d: %q", tid, data)
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		b.Fatalf("schedstat of thread %d: %q", tid, data)
	}
	return ns
}
