package ptrace

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sondedbg/sonde/target"
)

func readN(t testing.TB, c *target.Context, addr uint64, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if got, err := c.ReadMemory(addr, b); err != nil || got != n {
		t.Fatalf("read 0x%x: %d %v", addr, got, err)
	}
	return b
}

func TestBreakpointShadowAndHits(t *testing.T) {
	tg, r := newTarget(t)
	path := build(t, "tp_hotloop.c")
	p := launch(t, tg, path, "5")
	th := mainThread(t, p)
	tick := symbol(t, p, path, "tick")
	watched := symbol(t, p, path, "watched")
	orig := fileBytes(t, path, "tick", 8)
	bp, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: tick})
	if err != nil {
		t.Fatal(err)
	}
	// Reads through sonde show the original bytes; the process has the int3.
	if got := readN(t, p, tick, 8); !bytes.Equal(got, orig) {
		t.Fatalf("shadowed read % x, file has % x", got, orig)
	}
	if got, _ := readRaw(&process{pid: p.PID()}, tick, make([]byte, 1)); got != 1 {
		t.Fatal("raw read failed")
	}
	raw := make([]byte, 1)
	readRaw(&process{pid: p.PID()}, tick, raw)
	if raw[0] != 0xcc {
		t.Fatalf("no int3 in memory: %x", raw[0])
	}
	// A write under the breakpoint updates the saved byte and keeps the int3.
	if _, err := p.WriteMemory(tick, []byte{0x90}); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, p, tick, 1); got[0] != 0x90 {
		t.Fatalf("write under breakpoint not shown: %x", got[0])
	}
	readRaw(&process{pid: p.PID()}, tick, raw)
	if raw[0] != 0xcc {
		t.Fatal("write removed the breakpoint")
	}
	if _, err := p.WriteMemory(tick, orig[:1]); err != nil {
		t.Fatal(err)
	}
	i := 0
	r.wait(t, &i, "entry", isStop(p))
	for n := 1; n <= 5; n++ {
		if err := th.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
			t.Fatal(err)
		}
		e := r.wait(t, &i, "breakpoint hit", isStop(p))
		if e.Reason.Kind != target.ReasonBreakpoint || len(e.Reason.Breakpoints) != 1 || e.Reason.Breakpoints[0] != bp || e.PC != tick {
			t.Fatalf("hit %d: %s", n, describe(e))
		}
		regs, _ := th.Registers()
		if regs.PC() != tick {
			t.Fatalf("pc 0x%x, want the breakpoint address 0x%x", regs.PC(), tick)
		}
		// The registers published at the stop are the backend's.
		gen, err := th.GeneralRegisters()
		if err != nil || !bytes.Equal(gen.General, regs.General) || gen.XState != nil {
			t.Fatalf("hit %d: general registers at the stop differ from the backend's (%v)", n, err)
		}
		if n == 2 {
			// A write replaces them: the next read sees it.
			rbx := target.Registers{Arch: regs.Arch, General: bytes.Clone(regs.General), XState: regs.XState}
			rax, _ := rbx.DWARF(0)
			if err := rbx.SetUint64(regs.Arch.ByName("rax"), rax^0x5a5a); err != nil {
				t.Fatal(err)
			}
			if err := th.SetRegisters(&rbx); err != nil {
				t.Fatal(err)
			}
			if gen, err := th.GeneralRegisters(); err != nil || !bytes.Equal(gen.General, rbx.General) {
				t.Fatalf("after a write the general registers are stale (%v)", err)
			}
		}
		// tick() has run n-1 times before this hit.
		v := readN(t, p, watched, 8)
		if v[0] != byte(n-1) {
			t.Fatalf("hit %d: watched = %d", n, v[0])
		}
	}
	if bp.Hits() != 5 {
		t.Fatalf("hits %d", bp.Hits())
	}
	if err := tg.RemoveBreakpoint(bp); err != nil {
		t.Fatal(err)
	}
	readRaw(&process{pid: p.PID()}, tick, raw)
	if raw[0] != orig[0] {
		t.Fatal("remove left the int3")
	}
	th.Resume(target.ResumeContinue, target.ResumeOptions{})
	if e := r.wait(t, &i, "exit", isExit(p)); e.Exit.Code != 0 {
		t.Fatalf("exit %v", e.Exit)
	}
}

// TestMultiThreadBreakpoints runs four threads through two breakpoints: one over
// an emulated instruction (push %rbp), one over an instruction that must be
// stepped with the breakpoint lifted. No hit may be lost (a thread running past
// a lifted breakpoint would lose one) and no thread may die of SIGTRAP.
func TestMultiThreadBreakpoints(t *testing.T) {
	tg, r := newTarget(t)
	path := build(t, "tp_hotloop.c")
	const iters, threads = 60, 4
	p := launch(t, tg, path, "60", "4")
	bpTick, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: symbol(t, p, path, "tick")})
	if err != nil {
		t.Fatal(err)
	}
	bpOther, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: symbol(t, p, path, "other_entry")})
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	r.wait(t, &i, "entry", isStop(p))
	if err := p.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		e := r.wait(t, &i, "stop or exit", func(e target.Event) bool {
			return (e.Kind == target.EventStopped && e.Context.Parent() == p) || (e.Kind == target.EventExited && e.Context == p)
		})
		if e.Kind == target.EventExited {
			if e.Exit.Code != 0 || e.Exit.Signal != 0 {
				t.Fatalf("exit %v", e.Exit)
			}
			break
		}
		if e.Reason.Kind != target.ReasonBreakpoint {
			t.Fatalf("unexpected stop %s", describe(e))
		}
		if err := e.Context.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil && !errors.Is(err, target.ErrAlreadyExited) {
			t.Fatal(err)
		}
	}
	if bpTick.Hits() != iters*threads || bpOther.Hits() != iters*threads {
		t.Fatalf("hits: tick %d, other_entry %d, want %d each", bpTick.Hits(), bpOther.Hits(), iters*threads)
	}
}

// TestEventpointsRunOnTheTracerThread: an internal breakpoint with an OnHit
// handler is decided where the stop is noticed. The handler reads registers and
// memory through the Target (calls that come back to the tracer thread) and the
// thread runs on unseen until the handler asks for a stop.
func TestEventpointsRunOnTheTracerThread(t *testing.T) {
	tg, r := newTarget(t)
	path := build(t, "tp_hotloop.c")
	p := launch(t, tg, path, "50")
	th := mainThread(t, p)
	tick := symbol(t, p, path, "tick")
	watched := symbol(t, p, path, "watched")
	calls := 0
	var handlerErr error
	_, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: tick, Internal: true,
		OnHit: func(thread *target.Context, bp *target.Breakpoint) *target.SuspendReason {
			calls++
			regs, err := thread.Registers()
			if err != nil || regs.PC() != tick {
				handlerErr = fmt.Errorf("registers in handler: %v", err)
			}
			buf := make([]byte, 8)
			if _, err := thread.ReadMemory(watched, buf); err != nil || int(buf[0]) != calls-1 {
				handlerErr = fmt.Errorf("memory in handler: %v %d", err, buf[0])
			}
			if calls == 30 {
				return &target.SuspendReason{Kind: target.ReasonSharedLibrary}
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	r.wait(t, &i, "entry", isStop(p))
	th.Resume(target.ResumeContinue, target.ResumeOptions{})
	e := r.wait(t, &i, "the stop the handler asked for", isStop(p))
	if e.Reason.Kind != target.ReasonSharedLibrary || calls != 30 || handlerErr != nil {
		t.Fatalf("%s after %d calls: %v", describe(e), calls, handlerErr)
	}
	// Only one Started (the resume) and one Stopped were seen for 30 hits.
	started := 0
	for _, ev := range r.all() {
		if ev.Kind == target.EventStarted {
			started++
		}
	}
	if started != 1 {
		t.Fatalf("%d Started events, want 1", started)
	}
	th.Resume(target.ResumeContinue, target.ResumeOptions{})
	if e := r.wait(t, &i, "exit", isExit(p)); e.Exit.Code != 0 || calls != 50 {
		t.Fatalf("exit %v after %d calls", e.Exit, calls)
	}
}

// TestSuspendDuringEventpointHandler: a client suspends a thread while an
// internal breakpoint's handler runs at its stop. To the client the thread is
// running (no Stopped was sent), so the suspend must not fail with "already
// stopped" (the C agent accepts it too): it waits for the handler, and the
// thread, resumed silently by the handler's answer, stops for the client.
func TestSuspendDuringEventpointHandler(t *testing.T) {
	_, th, e := suspendDuringHandler(t, false)
	if e.Reason.Kind != target.ReasonUser {
		t.Fatalf("%s, want a user stop", describe(e))
	}
	if s, _, _ := th.State(); s != target.StateStopped {
		t.Fatalf("thread %s after the suspend", s)
	}
	if err := th.Suspend(); target.CodeOf(err) != target.CodeAlreadyStopped {
		t.Fatalf("second Suspend: %v, want already stopped", err)
	}
}

// TestSuspendProcessDuringEventpointHandler: a client suspends a whole
// process while one of its threads sits at an internal breakpoint whose
// handler runs. The backend counts that thread as stopped already; were the
// suspend to skip it, the handler would let the thread run on in a
// "suspended" process. The suspend must wait for the handler (here the
// handlers run on the tracer thread, which the suspend queues behind) and
// stop the thread after it.
func TestSuspendProcessDuringEventpointHandler(t *testing.T) {
	p, th, _ := suspendDuringHandler(t, true)
	if s, _, _ := th.State(); s != target.StateStopped {
		t.Fatalf("thread %s after the process's suspend", s)
	}
	if st := procState(t, p.PID()); st.State != 't' {
		t.Fatalf("the thread's kernel state is %c after the process's suspend, want t", st.State)
	}
}

// suspendDuringHandler runs tp_hotloop with an internal breakpoint on tick
// whose handler blocks at the first hit, suspends the main thread (or, with
// process, the whole process) while it is blocked, checks that the suspend
// waits for the handler and then succeeds, and returns the stop it caused.
func suspendDuringHandler(t *testing.T, process bool) (p, th *target.Context, stop target.Event) {
	tg, r := newTarget(t)
	path := build(t, "tp_hotloop.c")
	p = launch(t, tg, path, "0")
	th = mainThread(t, p)
	tick := symbol(t, p, path, "tick")
	inHandler := make(chan struct{})
	release := make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free) // before the target's cleanup, which needs the tracer thread
	first := true
	_, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: tick, Internal: true,
		OnHit: func(thread *target.Context, bp *target.Breakpoint) *target.SuspendReason {
			if first {
				first = false
				close(inHandler)
				<-release
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	subject := th
	if process {
		subject = p
	}
	i := 0
	r.wait(t, &i, "entry", isStop(p))
	subject.Resume(target.ResumeContinue, target.ResumeOptions{})
	<-inHandler
	done := make(chan error, 1)
	go func() { done <- subject.Suspend() }()
	select {
	case err := <-done:
		t.Fatalf("Suspend of %s returned %v while the handler ran; want it to wait", subject, err)
	case <-time.After(100 * time.Millisecond):
	}
	free()
	if err := <-done; err != nil {
		t.Fatalf("Suspend: %v", err)
	}
	return p, th, r.wait(t, &i, "the client's stop", isStop(p))
}

// TestSuspendAmidHotEventpoint: a thread hits an internal breakpoint whose
// handler lets it run on, thousands of times a second (a breakpoint whose
// condition is false, in a loop). Suspending it must work every time: the
// thread is found between hits, in a handler (Suspend waits for it), or it
// hits the breakpoint again just after the handler let it go (Suspend waits
// again instead of failing "already stopped").
func TestSuspendAmidHotEventpoint(t *testing.T) {
	tg, r := newTarget(t)
	path := build(t, "tp_hotloop.c")
	p := launch(t, tg, path, "0")
	th := mainThread(t, p)
	tick := symbol(t, p, path, "tick")
	var hits atomic.Int64
	_, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: tick, Internal: true,
		OnHit: func(thread *target.Context, bp *target.Breakpoint) *target.SuspendReason {
			hits.Add(1)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	r.wait(t, &i, "entry", isStop(p))
	for round := 0; round < 30; round++ {
		if err := th.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
			t.Fatalf("round %d: Resume: %v", round, err)
		}
		for before := hits.Load(); hits.Load() < before+3; {
			time.Sleep(time.Millisecond)
		}
		if err := th.Suspend(); err != nil {
			t.Fatalf("round %d: Suspend: %v (after %d hits)", round, err, hits.Load())
		}
		e := r.wait(t, &i, "the client's stop", isStop(p))
		if e.Reason.Kind != target.ReasonUser {
			t.Fatalf("round %d: %s, want a user stop", round, describe(e))
		}
	}
}
