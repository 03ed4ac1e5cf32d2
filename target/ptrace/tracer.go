package ptrace

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
)

// This file is the tracer thread: the one goroutine, locked to its OS thread,
// that issues every ptrace request, and how it waits for tracee statuses.

// loop is the tracer thread: every ptrace request runs here, because Linux ties
// a tracee to the thread that attached it. It returns (and lets the runtime
// discard the locked thread) only after Close, when no tracee is left.
func (b *Backend) loop(started chan struct{}) {
	runtime.LockOSThread()
	b.tracerTid = unix.Gettid()
	b.reaper.tracerTid = b.tracerTid
	close(started)
	for {
		select {
		case r := <-b.reqs:
			b.requested()
			b.spinner.arrived(workRequest, time.Now())
			b.finish(r)
		case <-b.reaper.notify:
			b.spinner.arrived(workStatus, time.Now())
		}
		b.drain()
		b.spinner.finished(time.Now())
		b.spin()
		if b.closing && len(b.threads) == 0 {
			b.reaper.close()
			close(b.done)
			b.cancelPosted()
			return
		}
	}
}

// runSafely runs fn and turns a panic into a logged failure: a panic on the
// tracer thread would end the process and leave breakpoints planted in tracees.
func (b *Backend) runSafely(fn func()) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "sonde: ptrace backend: internal error: %v\n", p)
		}
	}()
	fn()
}

// handleSafely is handle with runSafely's guard: a status that meets a bug
// loses its handling, not the tracer thread (and with it every tracee), and
// not the thread: keepUnderControl reports it stopped.
func (b *Backend) handleSafely(ev waitEvent) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "sonde: ptrace backend: internal error handling status %#x of thread %d: %v\n", uint32(ev.status), ev.tid, p)
			b.runSafely(func() { b.keepUnderControl(ev, p) })
		}
	}()
	if h := beforeHandle.Load(); h != nil {
		(*h)(ev)
	}
	b.handle(ev)
}

// keepUnderControl settles a thread whose status met a bug in handle. Left as
// it was, the thread sat in its ptrace-stop while sonde took it for running:
// stuck, its program with it, and waited for by nobody until a detach gave
// up on its status after 2 s. It is settled as detach settles a stop (the pc
// back on a breakpoint it hit, a signal kept for delivery) and reported
// stopped with the error, so that a resume lets it go on.
func (b *Backend) keepUnderControl(ev waitEvent, cause any) {
	th := b.threads[ev.tid]
	if th == nil || !ev.status.Stopped() || !th.running || taskState(th.tid) != 't' {
		return // gone, or handled far enough to run again
	}
	b.settle(th, ev.status)
	if b.threads[ev.tid] != th || th.running {
		return
	}
	th.interrupting = false
	if th.sig != 0 && th.ctx != nil {
		b.t.SetPending(th.ctx, target.SignalSet(0).With(target.Signal(th.sig)))
	}
	b.report(th, &target.SuspendReason{Kind: target.ReasonException,
		Message: fmt.Sprintf("internal error handling status %#x: %v", uint32(ev.status), cause)})
}

// beforeHandle, when set (by tests only), runs before each status is handled.
var beforeHandle atomic.Pointer[func(waitEvent)]

// do runs fn on the tracer thread: one hop for a whole operation.
//
// Called on the tracer thread itself (an eventpoint handler calling back into
// the Target), it runs fn at once.
func (b *Backend) do(op string, fn func() error) (err error) {
	if tid := b.tracerTid; tid != 0 && unix.Gettid() == tid {
		return fn()
	}
	err = target.Errorf(target.CodeOther, op, "", fmt.Errorf("internal error on the tracer thread"))
	r := &request{fn: func() { err = fn() }, done: make(chan struct{})}
	closed := target.Errorf(target.CodeInvalidContext, op, "", errClosed)
	select {
	case b.reqs <- r:
	case <-b.done:
		return closed
	}
	select {
	case <-r.done:
	case <-b.done:
		select {
		case <-r.done:
		default:
			return closed // the tracer thread ended before it took r
		}
	}
	return err
}

// post queues fn for the tracer thread without waiting for it; done gets
// fn's outcome there (or at once, on the calling thread, when the tracer
// thread has ended). Posted and waited-for requests run in the order made.
func (b *Backend) post(op string, fn func() error, done func(error)) {
	if tid := b.tracerTid; tid != 0 && unix.Gettid() == tid {
		done(fn())
		return
	}
	closed := func() { done(target.Errorf(target.CodeInvalidContext, op, "", errClosed)) }
	r := &request{cancel: closed}
	r.fn = func() {
		var err error = target.Errorf(target.CodeOther, op, "", fmt.Errorf("internal error on the tracer thread"))
		defer func() { done(err) }() // also when fn panics
		err = fn()
	}
	select {
	case b.reqs <- r:
		// The tracer thread may have ended after r was queued and after it
		// cancelled what it found queued.
		select {
		case <-b.done:
			if r.claimed.CompareAndSwap(false, true) {
				closed()
			}
		default:
		}
	case <-b.done:
		closed()
	}
}

// spinBudget is how long the tracer thread stays awake after doing something.
// It covers a client's whole turn after a stop (the event reaches it, it
// sends the next resume): breakpoint hit + resume through the TCF agent with
// one client process went from 3.3-3.7k to 4.8-5.3k hits/s when this went
// from 100 to 250 µs; 400 and 700 µs were no better (bench/tcf/BENCHMARKS.md).
const spinBudget = 250 * time.Microsecond

// spin keeps the tracer thread busy for a moment after work, polling for
// requests and tracee statuses itself. Waking a sleeping locked thread costs
// tens of microseconds on a VM, and work comes in bursts: a client resumes a
// thread right after its stop was reported, a resumed thread traps again soon.
// Catching those while awake is what makes breakpoint hit -> resume cycles
// fast. The budget is short, so an idle backend costs nothing; and b.spinner
// skips it where it has not been paying (see spinPolicy).
func (b *Backend) spin() {
	if b.closing || len(b.threads) == 0 || !b.spinner.worthSpinning() || b.clientHasTurn() {
		return
	}
	b.reaper.setTracerAwake(true)
	defer b.reaper.setTracerAwake(false)
	deadline := time.Now().Add(spinBudget)
	for time.Now().Before(deadline) && !b.clientHasTurn() {
		select {
		case r := <-b.reqs:
			b.requested()
			b.spinner.arrived(workRequest, time.Now())
			b.finish(r)
		case <-b.reaper.notify:
			// The reaper consumed a status before it saw this thread
			// awake (it was already waiting in the kernel): without
			// this case the status would sit in the backlog, unseen by
			// poll, until the spin ended (seen: a stop reported ~250 µs
			// late).
			b.spinner.arrived(workStatus, time.Now())
		default:
			if !b.reaper.poll() {
				// Let the tracee (or anything else) have this core if it
				// wants it.
				unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
				continue
			}
			b.spinner.arrived(workStatus, time.Now())
		}
		b.drain()
		now := time.Now()
		b.spinner.finished(now)
		if !b.spinner.worthSpinning() {
			return
		}
		deadline = now.Add(spinBudget)
	}
}

// drain handles every consumed wait status, including those that arrive while
// handling.
//
// One at a time, the rest left in b.deferred: handling a status can wait for
// another thread's (a breakpoint stepped in place stops the others, a
// displaced step waits for its own thread), and that wait must find the
// status already consumed there. Taken out in a batch, it was not found: the
// wait saw a thread that never stopped again, gave up after 2 s, took the
// thread for stopped and restarted it — and the old status was handled
// afterwards, for a running thread (a SIGTRAP with unreadable registers,
// reported as a signal at pc 0).
func (b *Backend) drain() {
	for {
		b.deferred = append(b.deferred, b.reaper.take()...)
		if len(b.deferred) == 0 {
			return
		}
		ev := b.deferred[0]
		b.deferred = b.deferred[1:]
		b.handleSafely(ev)
	}
}

// waitFor returns the next wait status of tid, blocking the tracer thread. Other
// threads' statuses met on the way are kept, in order, for drain.
//
// It never blocks in the kernel for good: another thread of this Go process can
// consume a tracee's status (a wait on the pidfd of an os/exec child that sonde
// also traces sees its ptrace-stops), and a group leader's exit is only
// reported once its other threads are reaped, which may need statuses sonde has
// not looked at yet. So it polls: spinning briefly (a single-step completes in
// tens of microseconds), then sleeping longer while collecting other statuses,
// and if the thread sits in a ptrace-stop whose status went elsewhere, it
// reports that stop as an interrupt stop.
func (b *Backend) waitFor(tid int) (unix.WaitStatus, error) {
	return b.waitForUntil(tid, time.Time{})
}

// waitForUntil is waitFor that gives up with ETIMEDOUT at deadline (zero:
// never), for callers that can do something about a stop that does not come
// (attach interrupts again). Other waits must not time out: a single-step of
// a blocking system call ends only when the call returns.
func (b *Backend) waitForUntil(tid int, deadline time.Time) (unix.WaitStatus, error) {
	start := time.Now()
	for i := 0; ; i++ {
		if ws, ok := b.takeDeferred(tid); ok {
			return ws, nil
		}
		b.reaper.mu.Lock()
		b.deferred = append(b.deferred, b.reaper.backlog...)
		b.reaper.backlog = nil
		ws, ok := b.takeDeferred(tid)
		var wpid int
		var err error
		if !ok {
			wpid, ws, err = wait4(tid, unix.WNOHANG)
		}
		b.reaper.mu.Unlock()
		switch {
		case ok || wpid == tid:
			return ws, nil
		case err != nil:
			return 0, err
		}
		if time.Since(start) < 2*time.Millisecond {
			// Most stops come within a few hundred microseconds, later on a
			// busy machine: poll, giving the CPU to whoever wants it (the
			// tracee) in between. (runtime.Gosched would be worse: a locked
			// goroutine that yields hands its thread over.)
			unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			continue
		}
		// Not a quick stop: collect other statuses, then sleep a little.
		for b.reaper.poll() {
		}
		b.letExitingThreadsGo(tid)
		time.Sleep(min(time.Duration(i%1000+1)*20*time.Microsecond, time.Millisecond))
		if i%16 == 15 && time.Since(start) > 2*time.Second {
			switch st := taskState(tid); {
			case st == 't':
				return unix.WaitStatus(0x7f | int(unix.SIGTRAP)<<8 | eventStop<<16), nil
			case st == 0 || st == 'X' || st == 'Z':
				// Gone, and its last status went to another waiter:
				// waiting longer would hang the tracer for good.
				return 0, unix.ESRCH
			}
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return 0, fmt.Errorf("thread %d did not stop by the deadline: %w", tid, unix.ETIMEDOUT)
		}
	}
}

// letExitingThreads handles the PTRACE_EVENT_EXIT stops of threads other than
// tid that wait in the backlog. A process's leader is reported dead only once
// all its threads are gone, and a thread stopped on its way out stays stopped
// until sonde lets it go; waiting for the leader while holding them would never
// end.
func (b *Backend) letExitingThreadsGo(tid int) {
	for k := 0; k < len(b.deferred); k++ {
		ev := b.deferred[k]
		if ev.tid != tid && ev.status.Stopped() && int(ev.status)>>16 == unix.PTRACE_EVENT_EXIT {
			b.deferred = append(b.deferred[:k:k], b.deferred[k+1:]...)
			b.handle(ev)
			k = -1 // handle may have changed the backlog: rescan
		}
	}
}

// nextEvent returns the next status of any tracee, waiting for it like waitFor
// does; ok is false when none came within the timeout.
func (b *Backend) nextEvent(timeout time.Duration) (ev waitEvent, ok bool) {
	deadline := time.Now().Add(timeout)
	for i := 0; ; i++ {
		b.reaper.mu.Lock()
		b.deferred = append(b.deferred, b.reaper.backlog...)
		b.reaper.backlog = nil
		b.reaper.mu.Unlock()
		if len(b.deferred) > 0 {
			ev = b.deferred[0]
			b.deferred = b.deferred[1:]
			return ev, true
		}
		if b.reaper.poll() {
			continue
		}
		if time.Now().After(deadline) {
			return ev, false
		}
		if i > 100 {
			time.Sleep(min(time.Duration(i-100)*20*time.Microsecond, time.Millisecond))
		}
	}
}

func (b *Backend) takeDeferred(tid int) (unix.WaitStatus, bool) {
	if l := b.orphans[tid]; len(l) > 0 {
		ws := l[0]
		if len(l) == 1 {
			delete(b.orphans, tid)
		} else {
			b.orphans[tid] = l[1:]
		}
		return ws, true
	}
	for i, ev := range b.deferred {
		if ev.tid == tid {
			b.deferred = append(b.deferred[:i:i], b.deferred[i+1:]...)
			return ev.status, true
		}
	}
	return 0, false
}
