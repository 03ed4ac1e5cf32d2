package ptrace

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/target"
)

// This file turns wait statuses into state changes and model events. Everything
// here runs on the tracer thread.

func exitStatusOf(ws unix.WaitStatus) target.ExitStatus {
	if ws.Signaled() {
		return target.ExitStatus{Signal: target.Signal(ws.Signal()), CoreDumped: ws.CoreDump()}
	}
	return target.ExitStatus{Code: ws.ExitStatus()}
}

func (b *Backend) osError(op string, th *thread, err error) error {
	var id target.ID
	if th != nil && th.ctx != nil {
		id = th.ctx.ID()
	}
	if errors.Is(err, unix.ESRCH) {
		return target.Errorf(target.CodeAlreadyExited, op, id, err)
	}
	return target.Errorf(target.CodeOther, op, id, err)
}

// handle applies one wait status.
func (b *Backend) handle(ev waitEvent) {
	th := b.threads[ev.tid]
	ws := ev.status
	if th == nil {
		switch {
		case ws.Stopped() && int(ws)>>16 == unix.PTRACE_EVENT_EXIT:
			// A thread sonde never got to know (its creator died before
			// reporting it) is exiting: let it.
			cont(ev.tid, 0)
		case ws.Stopped():
			// A new clone child can report its first stop before its parent's
			// clone event: keep it until the parent's event names it.
			b.orphans[ev.tid] = append(b.orphans[ev.tid], ws)
		}
		return
	}
	if ws.Exited() || ws.Signaled() {
		b.threadGone(th, exitStatusOf(ws))
		return
	}
	if !ws.Stopped() {
		return
	}
	th.running, th.listening = false, false
	th.invalidateRegs()
	sig := int(ws.StopSignal())
	switch event := int(ws) >> 16 & 0xff; event {
	case eventStop:
		b.onEventStop(th, sig)
	case unix.PTRACE_EVENT_CLONE, unix.PTRACE_EVENT_FORK, unix.PTRACE_EVENT_VFORK:
		b.onNewChild(th, event)
		b.restartAsBefore(th)
	case unix.PTRACE_EVENT_EXEC:
		b.onExec(th)
	case unix.PTRACE_EVENT_EXIT:
		if th.ctx != nil {
			b.t.Exiting(th.ctx)
		}
		th.step = nil
		b.restart(th, unix.PTRACE_CONT, 0)
	case 0:
		b.onSignal(th, sig)
	case unix.PTRACE_EVENT_VFORK_DONE:
		th.inVfork = false
		b.restartAsBefore(th)
	default: // nothing to do
		b.restartAsBefore(th)
	}
}

// onEventStop handles PTRACE_EVENT_STOP: a new child's first stop, the trap
// PTRACE_INTERRUPT asked for, a group (job-control) stop, or the notification
// that a group stop ended.
func (b *Backend) onEventStop(th *thread, sig int) {
	group := sig != int(unix.SIGTRAP)
	th.groupStopped = group
	th.interrupting = false
	if th.newborn {
		th.newborn = false
		if !b.initialStop(th) {
			return
		}
	}
	if th.wantStop {
		if !group && !b.takeInt3Trap(th) {
			return // stopped for something else: that status comes next
		}
		b.report(th, &target.SuspendReason{Kind: target.ReasonUser})
		return
	}
	if group {
		// The process was stopped by job control: keep it stopped as it would be
		// untraced, but stay told when SIGCONT comes.
		if listen(th.tid) == nil {
			th.running, th.listening, th.lastReq = true, true, unix.PTRACE_LISTEN
		}
		return
	}
	b.restartAsBefore(th)
}

// initialStop prepares a new thread at its first stop. It returns false when the
// thread is no longer sonde's business (a fork child that is not followed).
func (b *Backend) initialStop(th *thread) bool {
	p := th.proc
	if p.ctx == nil && !p.hidden {
		// A fork child that is not followed: remove the breakpoints it inherited
		// in its copy of memory, then let it go.
		b.cleanForkChild(p)
		detach(th.tid, 0)
		b.dropProcess(p)
		return false
	}
	if p.ctx != nil && p.memOwner == p && th.tid == p.pid && p.creatorPID != 0 {
		b.cleanForkChild(p)
		// A followed fork child: what the hooks plant is in place before
		// it runs.
		b.t.Forked(p.ctx)
	}
	return true
}

// cleanForkChild writes the original bytes under every software breakpoint of
// the parent, and under every range patched by an OnForkChild hook's owner,
// into a forked child's private copy of memory.
func (b *Backend) cleanForkChild(p *process) {
	parent := p.parent
	if parent == nil || p.mem == nil {
		return
	}
	parent.memMu.RLock()
	parent.shadow.Each(func(addr uint64, orig byte) {
		p.mem.WriteAt([]byte{orig}, int64(addr))
	})
	parent.memMu.RUnlock()
	b.restoreForkPatches(p) // and under jump probes (OnForkChild)
}

// onNewChild handles a clone, fork or vfork event of th.
func (b *Backend) onNewChild(th *thread, event int) {
	msg, err := eventMsg(th.tid)
	if err != nil || msg == 0 {
		return
	}
	child := int(msg)
	if event == unix.PTRACE_EVENT_CLONE {
		if st, err := readStatus(child); err != nil || st.Tgid == th.proc.pid {
			nt := b.addThread(th.proc, child)
			nt.newborn, nt.running, nt.wantStop = true, true, th.proc.stopAll
			if th.proc.ctx != nil {
				nt.ctx = b.t.AddThread(th.proc.ctx, child, th.ctx, threadName(th.proc.pid, child))
			}
			b.replayOrphans(child)
			return
		}
		// clone without CLONE_THREAD made a process: treat it as a fork.
	}
	p := b.addProcess(child)
	p.parent = th.proc
	p.creatorPID = th.proc.pid
	p.follow = th.proc.follow
	if event == unix.PTRACE_EVENT_VFORK {
		p.memOwner = th.proc.memOwner
		th.inVfork = true
	}
	nt := b.addThread(p, child)
	nt.newborn, nt.running = true, true
	switch {
	case th.proc.follow && th.proc.ctx != nil:
		name := threadName(child, child)
		b.setProcessContext(p, b.t.AddProcess(child, th.proc.ctx, name))
		nt.ctx = b.t.AddThread(p.ctx, child, th.ctx, name)
	case event == unix.PTRACE_EVENT_VFORK:
		p.hidden = true
	}
	b.replayOrphans(child)
}

func (b *Backend) replayOrphans(tid int) {
	for _, ws := range b.orphans[tid] {
		b.deferred = append(b.deferred, waitEvent{tid, ws})
	}
	delete(b.orphans, tid)
}

// onExec handles PTRACE_EVENT_EXEC: a new program replaced the address space, so
// its breakpoints and other threads are gone.
func (b *Backend) onExec(th *thread) {
	p := th.proc
	for _, ot := range p.sortedThreads() {
		if ot != th {
			b.dropThread(ot)
			if ot.ctx != nil {
				b.t.Exited(ot.ctx, target.ExitStatus{})
			}
		}
	}
	th.step = nil
	p.memMu.Lock()
	p.imagesExec()
	p.execs++
	p.sw = map[uint64]*swBreakpoint{}
	p.shadow.Reset()
	p.removed = map[uint64]bool{}
	p.hw = [4]*target.Breakpoint{}
	p.hwGen++
	p.memOwner = p
	p.scratch, p.scratchErr, p.scratchUnadvised = nil, nil, 0
	if p.mem != nil {
		p.mem.Close()
	}
	p.mem = openMem(p.pid)
	p.memMu.Unlock()
	if p.hidden {
		// A vfork child that was traced only because it shared its parent's
		// breakpoints: with its own memory now, let it go.
		detach(th.tid, 0)
		b.dropProcess(p)
		return
	}
	if p.ctx != nil {
		b.t.ForgetBreakpoints(p.ctx)
		b.t.SetName(p.ctx, threadName(p.pid, p.pid))
		// The hooks plant into the new program while it waits here.
		b.t.Execed(p.ctx)
	}
	b.restart(th, unix.PTRACE_CONT, 0)
}

// threadGone handles the exit of a thread; the leader's exit is the process's.
func (b *Backend) threadGone(th *thread, st target.ExitStatus) {
	p := th.proc
	b.dropThread(th)
	if th.tid == p.pid {
		b.dropProcess(p)
		if p.ctx != nil {
			b.t.Exited(p.ctx, st)
		}
		return
	}
	if th.ctx != nil {
		b.t.Exited(th.ctx, st)
	}
}

// onSignal handles a signal-delivery-stop (and SIGTRAPs the kernel raised for
// breakpoints and steps).
func (b *Backend) onSignal(th *thread, sig int) {
	var si siginfo
	if sig == int(unix.SIGTRAP) {
		var err error
		si, err = getSiginfo(th.tid)
		if err == nil && !si.fromUser() {
			b.onTrap(th, si)
			return
		}

	}
	p := th.proc
	if sig == int(unix.SIGCONT) && p.swallowCont > 0 {
		p.swallowCont--
		b.restartAsBefore(th)
		return
	}
	if p.ctx == nil {
		b.restart(th, th.lastReq, sig)
		return
	}
	s := target.Signal(sig)
	if p.ctx.DontStop().Has(s) {
		if p.ctx.DontPass().Has(s) {
			sig = 0
		}
		b.restart(th, th.lastReq, sig)
		return
	}
	if passesHandled(th, s) {
		b.restart(th, th.lastReq, sig)
		return
	}
	th.sig = sig
	b.t.SetPending(th.ctx, target.SignalSet(0).With(s))
	reason := &target.SuspendReason{Kind: target.ReasonSignal, Signal: s}
	if si.Signo == 0 {
		si, _ = getSiginfo(th.tid)
	}
	if si.Signo == int32(sig) {
		reason.SigInfo = si.model()
	}
	switch unix.Signal(sig) {
	case unix.SIGSEGV, unix.SIGBUS, unix.SIGILL, unix.SIGFPE:
		if !si.fromUser() {
			reason.Kind = target.ReasonException
			reason.Message = s.Description() + ": " + si.faultText()
		}
	}
	b.report(th, reason)
}

// onTrap sorts out a kernel SIGTRAP: int3, single-step or debug register.
func (b *Backend) onTrap(th *thread, si siginfo) {
	if si.Code == siKernel {
		b.onInt3(th)
		return
	}
	dr6, err := peekUser(th.tid, debugRegOffset+6*8)
	if err == nil && dr6 != 0 {
		pokeUser(th.tid, debugRegOffset+6*8, 0)
	}
	if slots := dr6 & 0xf; slots != 0 {
		b.onHardwareHit(th, slots)
		return
	}
	if th.step != nil {
		if !b.afterStep(th) {
			b.advance(th, 0)
		}
		return
	}
	// A step trap nobody asked for (a step cancelled by a stop): carry on.
	b.restartAsBefore(th)
}

// onInt3 handles a software breakpoint trap: the PC is one past the int3.
func (b *Backend) onInt3(th *thread) {
	if err := th.loadRegs(); err != nil {
		// Without its PC the trap cannot be told from the program's own
		// int3, and a SIGTRAP passed on would kill it. Unreadable registers
		// mean the thread is no longer in a ptrace-stop (killed meanwhile):
		// its exit comes next. Anything else: report the stop, not a signal.
		if !errors.Is(err, unix.ESRCH) {
			b.report(th, &target.SuspendReason{Kind: target.ReasonException, Message: "breakpoint trap with unreadable registers: " + err.Error()})
		}
		return
	}
	pc := th.pc()
	addr := pc - 1
	owner := th.proc.memOwner
	owner.memMu.RLock()
	e := owner.sw[addr]
	removed := owner.removed[addr]
	var users []*target.Breakpoint
	if e != nil {
		users = append(users, e.users...)
	}
	owner.memMu.RUnlock()
	if e == nil {
		if removed {
			// Removed after the thread trapped: run the restored instruction.
			th.setReg(offRIP, addr)
			b.restartAsBefore(th)
			return
		}
		// The program's own int3: a SIGTRAP for the program.
		b.onUserTrap(th)
		return
	}
	// The rewound pc goes to the kernel now, not at the resume: if sonde
	// dies while the thread sits here, the kernel releases it at the int3
	// (it dies of SIGTRAP, as documented) instead of one byte into the
	// instruction under it.
	th.rewindPC(addr)
	if s := th.step; s != nil && s.inCall && addr == s.ret {
		if th.sp() >= s.callSP {
			b.unplantInternal(owner, s.ret)
			s.inCall = false
			if len(users) == 0 {
				if !b.afterStep(th) {
					b.advance(th, 0)
				}
				return
			}
		} else if len(users) == 0 {
			b.advance(th, 0) // a recursive call's return: keep running
			return
		}
	}
	if len(users) == 0 || th.proc.ctx == nil || th.proc != owner {
		// Only internal breakpoints (another thread's step), or a process that
		// merely shares this memory: step over without a word.
		b.advance(th, 0)
		return
	}
	reason := &target.SuspendReason{Kind: target.ReasonBreakpoint, Breakpoints: users}
	if show, ok := b.t.RunEventpoints(th.ctx, reason, addr); ok {
		// Eventpoints (internal breakpoints with handlers) ran here, on the
		// tracer thread: go on as before unless one asks to stop.
		if show == nil {
			b.advance(th, 0)
			return
		}
		reason = show
	}
	b.cancelStep(th)
	for _, bp := range users {
		bp.CountHit()
	}
	b.report(th, reason)
}

func (b *Backend) onUserTrap(th *thread) {
	if th.ctx == nil {
		b.restart(th, th.lastReq, int(unix.SIGTRAP))
		return
	}
	th.sig = int(unix.SIGTRAP)
	b.t.SetPending(th.ctx, target.SignalSet(0).With(target.Signal(unix.SIGTRAP)))
	b.cancelStep(th)
	b.report(th, &target.SuspendReason{Kind: target.ReasonSignal, Signal: target.Signal(unix.SIGTRAP)})
}

// onHardwareHit reports a debug-register hit; slots is DR6's low four bits.
func (b *Backend) onHardwareHit(th *thread, slots uint64) {
	p := th.proc
	var hits []*target.Breakpoint
	watch := false
	for i := 0; i < 4; i++ {
		if slots&(1<<i) != 0 && p.hw[i] != nil {
			hits = append(hits, p.hw[i])
			if p.hw[i].Spec.Kind == target.Watchpoint {
				watch = true
			}
		}
	}
	if len(hits) == 0 || p.ctx == nil {
		b.restartAsBefore(th)
		return
	}
	b.cancelStep(th)
	reason := &target.SuspendReason{Kind: target.ReasonBreakpoint, Breakpoints: hits}
	if watch {
		reason.Kind = target.ReasonWatchpoint
		reason.DataAddress = hits[0].Spec.Addr
	} else {
		th.hwExecHit = true
	}
	for _, bp := range hits {
		bp.CountHit()
	}
	b.report(th, reason)
}

// report tells the model that th stopped.
func (b *Backend) report(th *thread, reason *target.SuspendReason) {
	th.wantStop = false
	if reason.Kind == target.ReasonUser {
		b.cancelStep(th)
	}
	if th.ctx == nil {
		b.restartAsBefore(th)
		return
	}
	b.leaveGenerated(th, reason) // never a pc of sonde's code (probes)
	b.announceStart(th)
	th.reported = true
	b.translateStop(th)
	if th.loadRegs() == nil {
		b.t.SetStopRegisters(th.ctx, &target.Registers{Arch: arch.AMD64, General: append([]byte(nil), th.regs[:]...)})
	}
	b.t.Stopped(th.ctx, reason, th.pc())
}
