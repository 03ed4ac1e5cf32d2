package ptrace

import (
	"errors"

	"golang.org/x/arch/x86/x86asm"
	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
)

var errEmptyRange = errors.New("empty step range")

// stepState is a step in progress on one thread.
type stepState struct {
	mode       target.ResumeMode
	count      int
	start, end uint64 // range modes
	over       bool   // calls run to their return
	// While inCall, the thread runs a called function to its return: an
	// internal breakpoint sits at ret and the step resumes when the thread
	// reaches it with the stack pointer back at callSP.
	inCall bool
	ret    uint64
	callSP uint64
}

func newStep(mode target.ResumeMode, opts target.ResumeOptions) *stepState {
	switch mode {
	case target.ResumeStepInto, target.ResumeStepOver:
		return &stepState{mode: mode, count: max(opts.Count, 1), over: mode == target.ResumeStepOver}
	case target.ResumeStepIntoRange, target.ResumeStepOverRange:
		return &stepState{mode: mode, start: opts.RangeStart, end: opts.RangeEnd, over: mode == target.ResumeStepOverRange}
	}
	return nil
}

// prepareRun brings a stopped thread's registers and debug registers up to date.
func (b *Backend) prepareRun(th *thread) error {
	if th.hwExecHit {
		// Resume past an instruction breakpoint instead of hitting it again.
		th.hwExecHit = false
		if th.loadRegs() == nil {
			th.setReg(offEFLAGS, th.reg(offEFLAGS)|eflagsRF)
		}
	}
	if err := th.flushRegs(); err != nil {
		return err
	}
	if th.hwGen != th.proc.hwGen {
		return b.applyDebugRegs(th)
	}
	return nil
}

// restart lets a stopped thread run with PTRACE_CONT, PTRACE_SINGLESTEP or
// PTRACE_LISTEN. Failure means the thread is gone; its exit status follows.
func (b *Backend) restart(th *thread, req, sig int) error {
	if th.running {
		return nil
	}
	if err := b.prepareRun(th); err != nil {
		return err
	}
	var err error
	switch req {
	case unix.PTRACE_SINGLESTEP:
		err = singleStep(th.tid, sig)
	case unix.PTRACE_LISTEN:
		err = listen(th.tid)
		th.listening = err == nil
	default:
		req = unix.PTRACE_CONT
		err = cont(th.tid, sig)
	}
	if err != nil {
		return err
	}
	th.running, th.lastReq = true, req
	th.invalidateRegs()
	if th.interrupting && req != unix.PTRACE_LISTEN {
		// The stop just handled may have used up the interrupt: the kernel
		// clears a pending PTRACE_INTERRUPT trap at any ptrace-stop (a
		// clone event, a signal) that comes before it. Whoever waits for
		// the interrupt stop would wait for good (a thread blocked in a
		// futex never stops on its own: stop-the-world hung). Asked again,
		// the trap comes; asked twice, it still comes once.
		if interrupt(th.tid) != nil {
			th.interrupting = false
		}
	}
	b.announceStart(th)
	return nil
}

// restartAsBefore restarts a thread after a stop sonde consumed itself (an
// event, an interrupt it no longer needs): the way it was running before.
func (b *Backend) restartAsBefore(th *thread) {
	req := th.lastReq
	if req == unix.PTRACE_LISTEN && !th.groupStopped {
		req = unix.PTRACE_CONT
	}
	b.restart(th, req, 0)
}

// cancelStep ends a step in progress (another stop took over).
func (b *Backend) cancelStep(th *thread) {
	if s := th.step; s != nil && s.inCall {
		b.unplantInternal(th.proc.memOwner, s.ret)
	}
	th.step = nil
}

// advance moves a stopped thread on according to its step (nil: run freely),
// first executing the instruction under a breakpoint at its PC if there is one.
func (b *Backend) advance(th *thread, sig int) error {
	b.redirect(th) // resuming from a probe's stop skips its payload
	for {
		s := th.step
		var pc uint64
		if s != nil || b.hasBreakpoints(th.proc.memOwner) {
			pc = th.pc() // needs the registers: skip when nothing depends on it
		}
		if s != nil && s.over && !s.inCall {
			if n := callLength(b, th, pc); n > 0 {
				s.inCall, s.ret, s.callSP = true, pc+uint64(n), th.sp()
				if err := b.plantInternal(th.proc.memOwner, s.ret); err != nil {
					s.inCall = false // cannot run to the return: step into it instead
				}
			}
		}
		if pc != 0 && b.breakpointAt(th.proc.memOwner, pc) {
			ok, err := b.stepOverBreakpoint(th, sig)
			sig = 0
			if err != nil || !ok {
				return err
			}
			if s != nil && !s.inCall {
				if b.afterStep(th) {
					return nil
				}
				continue
			}
			return b.restart(th, unix.PTRACE_CONT, 0)
		}
		if s == nil || s.inCall {
			return b.restart(th, unix.PTRACE_CONT, sig)
		}
		return b.restart(th, unix.PTRACE_SINGLESTEP, sig)
	}
}

// afterStep runs when a stepping thread finished one instruction (or a whole
// call). It reports the stop and returns true when the step is done.
func (b *Backend) afterStep(th *thread) bool {
	s := th.step
	pc := th.pc()
	done := true
	switch s.mode {
	case target.ResumeStepInto, target.ResumeStepOver:
		s.count--
		done = s.count <= 0
	case target.ResumeStepIntoRange, target.ResumeStepOverRange:
		done = pc < s.start || pc >= s.end
	}
	if !done && th.proc.ctx != nil {
		if users := b.userBreakpointsAt(th.proc, pc); len(users) > 0 {
			// Stepping onto a breakpoint stops there, as if it was hit.
			th.step = nil
			for _, bp := range users {
				bp.CountHit()
			}
			b.report(th, &target.SuspendReason{Kind: target.ReasonBreakpoint, Breakpoints: users})
			return true
		}
	}
	if !done {
		return false
	}
	th.step = nil
	b.report(th, &target.SuspendReason{Kind: target.ReasonStep})
	return true
}

// callLength returns the length of the call instruction at pc, or 0 if it is not
// a call.
func callLength(b *Backend, th *thread, pc uint64) int {
	var code [16]byte
	n, _ := b.readMemory(th.proc, pc, code[:])
	inst, err := x86asm.Decode(code[:n], 64)
	// Only a call's length matters here, which x86asm decodes right (its known
	// length bug concerns VEX forms such as vzeroupper, never calls).
	if err != nil || inst.Op != x86asm.CALL {
		return 0
	}
	return inst.Len
}

// stepOverBreakpoint executes the original instruction under the breakpoint at
// th's PC. Simple instructions are emulated in the registers (no trap at all);
// others are single-stepped with the breakpoint lifted while every other thread
// of the process is held, so none can run past it. It returns false when the
// thread stopped for something else (that status is handled later).
func (b *Backend) stepOverBreakpoint(th *thread, sig int) (bool, error) {
	if sig == 0 && b.emulate(th) {
		return true, nil
	}
	if sig == 0 && !b.noDisplaced {
		if done, ok, err := b.displacedStep(th); done {
			return ok, err
		}
	}
	// The fallback: what cannot be relocated (system calls, instructions
	// x86asm cannot decode, a signal to deliver on the way, no scratch area)
	// is stepped in place with the int3 lifted and every other thread held.
	owner := th.proc.memOwner
	pc := th.pc()
	held := b.stopOthers(th)
	b.dstats.held += len(held)
	defer b.resumeOthers(held)
	owner.memMu.Lock()
	if orig, ok := owner.shadow.Original(pc); ok && owner.mem != nil {
		owner.mem.WriteAt([]byte{orig}, int64(pc))
	}
	owner.memMu.Unlock()
	var ws unix.WaitStatus
	var err error
	for try := 0; try < 8; try++ {
		if err = b.restart(th, unix.PTRACE_SINGLESTEP, sig); err != nil {
			break
		}
		if ws, err = b.waitFor(th.tid); err != nil {
			break
		}
		if !ws.Stopped() || int(ws)>>16 != eventStop || th.wantStop {
			break
		}
		// A PTRACE_INTERRUPT left over from an earlier stop trapped before the
		// instruction ran: step again.
		th.running, th.interrupting = false, false
		sig = 0
	}
	owner.memMu.Lock()
	if e2 := owner.sw[pc]; e2 != nil && owner.mem != nil {
		owner.mem.WriteAt(breakpointInsn, int64(pc))
	}
	owner.memMu.Unlock()
	if err != nil {
		return false, err
	}
	if ws.Stopped() && ws.StopSignal() == unix.SIGTRAP && int(ws)>>16 == 0 {
		if si, err := getSiginfo(th.tid); err == nil && si.Code != siKernel && !si.fromUser() {
			th.running = false
			th.invalidateRegs()
			if dr6, _ := peekUser(th.tid, debugRegOffset+6*8); dr6&0xf != 0 {
				// A watchpoint fired on the displaced instruction: report it.
				pokeUser(th.tid, debugRegOffset+6*8, 0)
				b.onHardwareHit(th, dr6&0xf)
				return false, nil
			}
			return true, nil
		}
	}
	// Something else happened (a signal, an event, exit): handle it in order.
	b.deferred = append([]waitEvent{{th.tid, ws}}, b.deferred...)
	return false, nil
}

// stopOthers stops every running thread of th's memory space except th, and
// returns those sonde stopped (not those that stopped for a reason of their own,
// whose statuses wait in the backlog).
func (b *Backend) stopOthers(th *thread) []*thread {
	var sent []*thread
	for _, p := range b.sharers(th.proc.memOwner) {
		for _, ot := range p.sortedThreads() {
			if ot == th || !ot.running || ot.inVfork {
				continue // (a vfork parent cannot run until its child execs)
			}
			if !ot.interrupting && interrupt(ot.tid) != nil {
				continue
			}
			ot.interrupting = true
			sent = append(sent, ot)
		}
	}
	var held []*thread
	for _, ot := range sent {
		if b.threads[ot.tid] != ot {
			continue
		}
		ws, err := b.waitFor(ot.tid)
		if err != nil {
			continue
		}
		if ws.Stopped() && int(ws)>>16 == eventStop {
			ot.running, ot.interrupting = false, false
			ot.invalidateRegs()
			if ot.newborn {
				ot.newborn = false
				if !b.initialStop(ot) {
					continue
				}
			}
			ot.groupStopped = ws.StopSignal() != unix.SIGTRAP
			if !ot.groupStopped && !b.takeInt3Trap(ot) {
				continue // stopped for something else: its status is in b.deferred
			}
			if ot.wantStop {
				b.report(ot, &target.SuspendReason{Kind: target.ReasonUser})
				continue
			}
			held = append(held, ot)
			continue
		}
		b.deferred = append(b.deferred, waitEvent{ot.tid, ws})
	}
	return held
}

func (b *Backend) resumeOthers(held []*thread) {
	for _, ot := range held {
		if b.threads[ot.tid] == ot && !ot.running {
			b.restartAsBefore(ot)
		}
	}
}

// sharers returns the processes whose memory is owner's (owner and its vfork
// children before they exec).
func (b *Backend) sharers(owner *process) []*process {
	out := []*process{owner}
	for _, p := range b.allProcesses() {
		if p != owner && p.memOwner == owner {
			out = append(out, p)
		}
	}
	return out
}

// --- target.Backend run control ---

// CanResume implements target.Backend.
func (b *Backend) CanResume(ctx *target.Context) target.ResumeModes {
	m := target.ResumeModes(0).With(target.ResumeContinue)
	if !ctx.IsProcess() {
		m = m.With(target.ResumeStepInto).With(target.ResumeStepOver).
			With(target.ResumeStepIntoRange).With(target.ResumeStepOverRange)
	}
	return m
}

// Suspend implements target.Backend: every running thread named is interrupted in
// one go, then each stop is collected; it returns when all are stopped.
func (b *Backend) Suspend(ctx *target.Context) error {
	return b.do("suspend", func() error {
		p, err := b.procOf(ctx, "suspend")
		if err != nil {
			return err
		}
		if ctx.IsProcess() {
			p.stopAll = true
			defer func() { p.stopAll = false }()
			for round := 0; round < 100; round++ {
				if !b.stopThreads(p.sortedThreads()) {
					break
				}
			}
			return nil
		}
		th, err := b.threadOf(ctx, "suspend")
		if err != nil {
			return err
		}
		if th.reported {
			return target.Errorf(target.CodeAlreadyStopped, "suspend", ctx.ID(), nil)
		}
		b.stopThreads([]*thread{th})
		return nil
	})
}

// stopThreads interrupts and waits for the threads not yet reported stopped. It
// returns whether it had anything to do.
func (b *Backend) stopThreads(ths []*thread) bool {
	var waiting []*thread
	for _, th := range ths {
		if th.reported || th.inVfork {
			// (A thread waiting in vfork cannot stop before its child execs or
			// exits, which may be never if the child is stopped: it stays running.)
			continue
		}
		th.wantStop = true
		if !th.running {
			b.report(th, &target.SuspendReason{Kind: target.ReasonUser})
			continue
		}
		if !th.interrupting && !th.newborn {
			if interrupt(th.tid) != nil {
				continue
			}
			th.interrupting = true
		}
		waiting = append(waiting, th)
	}
	for _, th := range waiting {
		for th.wantStop && b.threads[th.tid] == th {
			ws, err := b.waitFor(th.tid)
			if err != nil {
				break
			}
			b.handle(waitEvent{th.tid, ws})
		}
	}
	return len(waiting) > 0
}

// Resume implements target.Backend.
func (b *Backend) Resume(ctx *target.Context, mode target.ResumeMode, opts target.ResumeOptions) error {
	return b.do("resume", func() error { return b.resume(ctx, mode, opts) })
}

// ResumeAsync implements target.AsyncResumer.
func (b *Backend) ResumeAsync(ctx *target.Context, mode target.ResumeMode, opts target.ResumeOptions, done func(error)) {
	b.post("resume", func() error { return b.resume(ctx, mode, opts) }, done)
}

// resume runs on the tracer thread.
func (b *Backend) resume(ctx *target.Context, mode target.ResumeMode, opts target.ResumeOptions) error {
	p, err := b.procOf(ctx, "resume")
	if err != nil {
		return err
	}
	if ctx.IsProcess() {
		for _, th := range p.sortedThreads() {
			if th.reported && !th.running {
				if err := b.resumeThread(th, mode, opts); err != nil {
					return err
				}
			}
		}
		return nil
	}
	th, err := b.threadOf(ctx, "resume")
	if err != nil {
		return err
	}
	if !th.reported || th.running {
		return target.Errorf(target.CodeAlreadyRunning, "resume", ctx.ID(), nil)
	}
	if (mode == target.ResumeStepIntoRange || mode == target.ResumeStepOverRange) && opts.RangeEnd <= opts.RangeStart {
		return target.Errorf(target.CodeInvalidAddress, "resume", ctx.ID(), errEmptyRange)
	}
	return b.resumeThread(th, mode, opts)
}

func (b *Backend) resumeThread(th *thread, mode target.ResumeMode, opts target.ResumeOptions) error {
	sig := th.sig
	switch {
	case opts.Signal > 0:
		sig = int(opts.Signal)
	case opts.Signal < 0:
		sig = 0
	case sig != 0 && th.proc.ctx.DontPass().Has(target.Signal(sig)):
		sig = 0
	}
	th.sig = 0
	b.t.SetPending(th.ctx, 0)
	th.step = newStep(mode, opts)
	th.reported = false
	th.startPending = true
	err := b.advance(th, sig)
	b.announceStart(th)
	if err != nil {
		return b.osError("resume", th, err)
	}
	return nil
}

// announceStart reports a client's resume of th to the model (Started), once:
// after the thread was let run, or before a stop reported on the way.
func (b *Backend) announceStart(th *thread) {
	if th.startPending {
		th.startPending = false
		b.t.Started(th.ctx)
	}
}
