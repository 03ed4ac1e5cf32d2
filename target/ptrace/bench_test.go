package ptrace

import (
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
)

// benchBreakpointCycle measures breakpoint hit -> report -> resume cycles on a hot
// loop: a listener resumes the thread on every Stopped event, as a client that
// counts hits would.
func benchBreakpointCycle(b *testing.B, symbolName string, inPlace bool) {
	path := build(b, "tp_hotloop.c")
	tg, err := New()
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	tg.Backend().(*Backend).noDisplaced = inPlace
	p, _, err := tg.Launch(target.LaunchOptions{Path: path, Argv: []string{path}, StopAtEntry: true, Stdio: target.StdioNull})
	if err != nil {
		b.Fatal(err)
	}
	defer testprog.OpenProc(b, p.PID()).Kill()
	th := p.Children()[0]
	if _, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: symbol(b, p, path, symbolName)}); err != nil {
		b.Fatal(err)
	}
	hits := make(chan struct{}, 1)
	n := 0
	stop := false
	tg.AddListener(func(e target.Event) {
		if e.Kind != target.EventStopped || e.Reason.Kind != target.ReasonBreakpoint {
			return
		}
		n++
		if n >= b.N || stop {
			hits <- struct{}{}
			return
		}
		e.Context.Resume(target.ResumeContinue, target.ResumeOptions{})
	})
	b.ResetTimer()
	start := time.Now()
	if err := th.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		b.Fatal(err)
	}
	select {
	case <-hits:
	case <-time.After(5 * time.Minute):
		b.Fatal("timeout")
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "hits/s")
}

// BenchmarkBreakpointCycle: the breakpoint is on tick(), whose first instruction
// (push %rbp) is emulated.
func BenchmarkBreakpointCycle(b *testing.B) { benchBreakpointCycle(b, "tick", false) }

// BenchmarkBreakpointCycleStepped: the breakpoint is on other_entry(), whose
// first instruction (a rip-relative load) is stepped displaced.
func BenchmarkBreakpointCycleStepped(b *testing.B) { benchBreakpointCycle(b, "other_entry", false) }

// BenchmarkBreakpointCycleSteppedInPlace: the same, stepped with the
// breakpoint lifted and the other threads held (the fallback; the way every
// non-emulated instruction went before displaced stepping).
func BenchmarkBreakpointCycleSteppedInPlace(b *testing.B) {
	benchBreakpointCycle(b, "other_entry", true)
}

// BenchmarkReadMemory1MiB reads 1 MiB of a stopped process (libc's text, with a
// breakpoint planted in it so that the shadow is applied) through the model.
func BenchmarkReadMemory1MiB(b *testing.B) {
	path := build(b, "tp_hotloop.c")
	tg, err := New()
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	r := newRecorder(tg)
	p, _, err := tg.Launch(target.LaunchOptions{Path: path, Argv: []string{path}, StopAtEntry: true, Stdio: target.StdioNull})
	if err != nil {
		b.Fatal(err)
	}
	defer testprog.OpenProc(b, p.PID()).Kill()
	th := p.Children()[0]
	i := 0
	r.wait(b, &i, "entry", isStop(p))
	if _, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: symbol(b, p, path, "tick")}); err != nil {
		b.Fatal(err)
	}
	th.Resume(target.ResumeContinue, target.ResumeOptions{})
	r.wait(b, &i, "breakpoint", isStop(p))
	m, err := p.MemoryMap()
	if err != nil {
		b.Fatal(err)
	}
	var region target.MemoryRegion
	for _, reg := range m {
		if reg.Perm&target.PermRead != 0 && reg.Size > region.Size && reg.FileName != "[vvar]" && reg.FileName != "[vsyscall]" {
			region = reg
		}
	}
	if region.Size < 1<<20 {
		b.Fatalf("no 1 MiB region to read; largest is %s", region)
	}
	if _, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: region.Addr + 4096}); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n, err := p.ReadMemory(region.Addr, buf); err != nil || n != len(buf) {
			b.Fatalf("read %s: %d %v", region, n, err)
		}
	}
}

// BenchmarkSuspendResume64 suspends and resumes all threads of a 65-thread
// process (main, 4 blocked threads and 60 sleeping ones).
func BenchmarkSuspendResume64(b *testing.B) {
	path := build(b, "tp_threads.c")
	cmd := startUntraced(b, path, "60")
	tg, err := New()
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	p, err := tg.Attach(cmd.Process.Pid, target.AttachOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if len(p.Children()) != 65 {
		b.Fatalf("%d threads", len(p.Children()))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.Suspend(); err != nil {
			b.Fatal(err)
		}
		if err := p.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEventpointCycle: hit -> decide -> resume decided on the tracer thread
// by an eventpoint handler (an internal breakpoint with OnHit, which is how
// conditions and hit counts are evaluated agent-side), no client round trip.
func BenchmarkEventpointCycle(b *testing.B) { benchEventpointCycle(b, "tick", false) }

// BenchmarkEventpointCycleDisplaced: the same on other_entry, whose first
// instruction (a rip-relative load) is stepped displaced: copied to the
// thread's slot and single-stepped there, the int3 never lifted.
func BenchmarkEventpointCycleDisplaced(b *testing.B) { benchEventpointCycle(b, "other_entry", false) }

// BenchmarkEventpointCycleInPlace: other_entry again, stepped the old way
// (int3 lifted, other threads held): displaced stepping's "before".
func BenchmarkEventpointCycleInPlace(b *testing.B) { benchEventpointCycle(b, "other_entry", true) }

// BenchmarkEventpointCycleDisplaced4T and ...InPlace4T: four threads call
// other_entry; hits/s is the whole process's. In place, every hit holds the
// three other threads.
func BenchmarkEventpointCycleDisplaced4T(b *testing.B) {
	benchEventpointCycle(b, "other_entry", false, "0", "4")
}

func BenchmarkEventpointCycleInPlace4T(b *testing.B) {
	benchEventpointCycle(b, "other_entry", true, "0", "4")
}

func benchEventpointCycle(b *testing.B, symbolName string, inPlace bool, args ...string) {
	path := build(b, "tp_hotloop.c")
	tg, err := New()
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	tg.Backend().(*Backend).noDisplaced = inPlace
	p, _, err := tg.Launch(target.LaunchOptions{Path: path, Argv: append([]string{path}, args...), StopAtEntry: true, Stdio: target.StdioNull})
	if err != nil {
		b.Fatal(err)
	}
	defer testprog.OpenProc(b, p.PID()).Kill()
	th := p.Children()[0]
	n := 0
	hits := make(chan struct{}, 1)
	_, err = tg.SetBreakpoint(p, target.BreakpointSpec{Addr: symbol(b, p, path, symbolName), Internal: true,
		OnHit: func(thread *target.Context, bp *target.Breakpoint) *target.SuspendReason {
			n++
			if n >= b.N {
				select { // other threads hit too once the count is reached
				case hits <- struct{}{}:
				default:
				}
				return &target.SuspendReason{Kind: target.ReasonBreakpoint, Breakpoints: []*target.Breakpoint{bp}}
			}
			return nil
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	if err := th.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		b.Fatal(err)
	}
	select {
	case <-hits:
	case <-time.After(5 * time.Minute):
		b.Fatal("timeout")
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "hits/s")
}
