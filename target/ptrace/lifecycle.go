package ptrace

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
)

// Launch implements target.Backend.
//
// The program is started with PTRACE_TRACEME (Go offers no hook between fork
// and exec) and stops at its exec. Sonde then hands it over to a PTRACE_SEIZE
// attachment, the kind every other tracee has (PTRACE_INTERRUPT and group-stop
// reporting need it): detach with SIGSTOP, seize the stopped child, clear the
// job-control stop with SIGCONT and swallow the resulting traps, all before the
// program's first instruction runs.
func (b *Backend) Launch(opts target.LaunchOptions) (*target.Context, *target.ProcessIO, error) {
	var ctx *target.Context
	var pio *target.ProcessIO
	err := b.do("launch", func() error {
		var err error
		ctx, pio, err = b.launch(opts)
		return err
	})
	return ctx, pio, err
}

func (b *Backend) launch(opts target.LaunchOptions) (*target.Context, *target.ProcessIO, error) {
	const op = "launch"
	path := opts.Path
	if !strings.Contains(path, "/") {
		lp, err := exec.LookPath(path)
		if err != nil {
			return nil, nil, target.Errorf(target.CodeOther, op, "", err)
		}
		path = lp
	}
	cmd := &exec.Cmd{Path: path, Args: opts.Argv, Env: opts.Env, Dir: opts.Dir,
		SysProcAttr: &syscall.SysProcAttr{Ptrace: true}}
	if len(cmd.Args) == 0 {
		cmd.Args = []string{opts.Path}
	}
	pio := &target.ProcessIO{}
	var closeAfter []*os.File
	defer func() {
		for _, f := range closeAfter {
			f.Close()
		}
	}()
	switch opts.Stdio {
	case target.StdioInherit:
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	case target.StdioPipes:
		var err error
		if pio.Stdin, err = cmd.StdinPipe(); err == nil {
			if pio.Stdout, err = cmd.StdoutPipe(); err == nil {
				pio.Stderr, err = cmd.StderrPipe()
			}
		}
		if err != nil {
			return nil, nil, target.Errorf(target.CodeOther, op, "", err)
		}
	case target.StdioPty:
		master, slave, err := openPty()
		if err != nil {
			return nil, nil, target.Errorf(target.CodeOther, op, "", err)
		}
		closeAfter = append(closeAfter, slave)
		pio.Pty = master
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr.Setsid = true
		cmd.SysProcAttr.Setctty = true
		cmd.SysProcAttr.Ctty = 0
	case target.StdioNull:
		// exec.Cmd connects nil streams to /dev/null.
	}
	if opts.DisableASLR {
		// The personality of the forking thread (this one) is inherited by the
		// child and survives its exec; restore ours at once.
		old, err := personality(0xffffffff)
		if err == nil {
			personality(old | addrNoRandomize)
			defer personality(old)
		}
	}
	if err := cmd.Start(); err != nil {
		if pio.Pty != nil {
			pio.Pty.Close()
		}
		return nil, nil, target.Errorf(target.CodeOther, op, "", err)
	}
	pid := cmd.Process.Pid
	cmd.Process.Release() // sonde reaps it itself
	fail := func(err error) (*target.Context, *target.ProcessIO, error) {
		unix.Kill(pid, unix.SIGKILL)
		b.reaper.add(pid) // reap the corpse
		return nil, nil, target.Errorf(target.CodeOther, op, target.ProcessID(pid), err)
	}
	// 1. The exec stop of PTRACE_TRACEME.
	ws, err := b.waitFor(pid)
	if err != nil || !ws.Stopped() {
		return fail(fmt.Errorf("program did not stop at exec (status %v, %v)", ws, err))
	}
	// 2. Hand over to PTRACE_SEIZE through a job-control stop.
	if err := detach(pid, int(unix.SIGSTOP)); err != nil {
		return fail(err)
	}
	if err := b.waitJobStop(pid); err != nil {
		return fail(err)
	}
	if err := seize(pid, traceOptions); err != nil {
		return fail(err)
	}
	p := b.addProcess(pid)
	p.launched = true
	p.follow = opts.FollowForks
	th := b.addThread(p, pid)
	if ws, err = b.waitFor(pid); err != nil || !ws.Stopped() {
		b.dropProcess(p)
		return fail(fmt.Errorf("no stop after seize (status %v, %v)", ws, err))
	}
	// 3. End the job-control stop; consume the notification trap and the
	// SIGCONT itself without letting the program execute anything.
	unix.Kill(pid, unix.SIGCONT)
	for i := 0; ; i++ {
		if i == 8 {
			b.dropProcess(p)
			return fail(fmt.Errorf("could not take the program out of its job-control stop"))
		}
		if err := cont(pid, 0); err != nil {
			b.dropProcess(p)
			return fail(err)
		}
		if ws, err = b.waitFor(pid); err != nil || !ws.Stopped() {
			b.dropProcess(p)
			return fail(fmt.Errorf("program ended while starting (status %v, %v)", ws, err))
		}
		if ws.StopSignal() == unix.SIGCONT && int(ws)>>16 == 0 {
			break
		}
	}
	th.running = false
	name := threadName(pid, pid)
	b.setProcessContext(p, b.t.AddProcess(pid, nil, name))
	th.ctx = b.t.AddThread(p.ctx, pid, nil, name)
	if opts.StopAtEntry {
		b.report(th, &target.SuspendReason{Kind: target.ReasonUser})
	} else {
		b.restart(th, unix.PTRACE_CONT, 0)
	}
	return p.ctx, pio, nil
}

// waitJobStop waits for the job-control stop of a child that is not traced.
func (b *Backend) waitJobStop(pid int) error {
	b.reaper.mu.Lock()
	defer b.reaper.mu.Unlock()
	_, ws, err := wait4(pid, unix.WUNTRACED)
	if err != nil {
		return err
	}
	if !ws.Stopped() {
		return fmt.Errorf("child did not stop (status %v)", ws)
	}
	return nil
}

func openPty() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	var unlock int32
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, m.Fd(), unix.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		m.Close()
		return nil, nil, e
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, s, nil
}

// Attach implements target.Backend with PTRACE_SEIZE of every thread in
// /proc/PID/task, repeated until no new thread appears (threads created while
// sonde attaches are caught either by the listing or, once their creator is
// seized, by PTRACE_O_TRACECLONE).
func (b *Backend) Attach(pid int, opts target.AttachOptions) (*target.Context, error) {
	var ctx *target.Context
	err := b.do("attach", func() error {
		var err error
		ctx, err = b.attach(pid, opts)
		return err
	})
	return ctx, err
}

func (b *Backend) attach(pid int, opts target.AttachOptions) (*target.Context, error) {
	const op = "attach"
	id := target.ProcessID(pid)
	if pid <= 0 {
		return nil, target.Errorf(target.CodeInvalidContext, op, "", fmt.Errorf("invalid pid %d: %w", pid, unix.ESRCH))
	}
	if b.threads[pid] != nil {
		return nil, target.Errorf(target.CodeAlreadyAttached, op, id, nil)
	}
	if st, err := readStatus(pid); err != nil {
		return nil, target.Errorf(target.CodeInvalidContext, op, id, unix.ESRCH)
	} else if st.Tgid != pid {
		return nil, target.Errorf(target.CodeInvalidContext, op, id, fmt.Errorf("%d is a thread of process %d, not a process: %w", pid, st.Tgid, unix.ESRCH))
	} else if pid == os.Getpid() {
		return nil, target.Errorf(target.CodeInvalidContext, op, id, fmt.Errorf("sonde cannot debug itself: %w", unix.EPERM))
	} else if st.State == 'Z' || st.State == 'X' {
		// A zombie: it exited and waits for its parent to reap it; ptrace
		// would only say EPERM.
		return nil, target.Errorf(target.CodeAlreadyExited, op, id, fmt.Errorf("process %d has exited (a zombie waiting for its parent)", pid))
	}
	if err := seize(pid, traceOptions); err != nil {
		return nil, attachError(pid, err)
	}
	p := b.addProcess(pid)
	p.follow = opts.FollowForks
	p.stopAll = true
	defer func() { p.stopAll = false }()
	leader := b.addThread(p, pid)
	leader.running = true
	seized := []*thread{leader}
	for round := 0; round < 1000; round++ {
		tids, err := taskIDs(pid)
		if err != nil {
			break
		}
		added := 0
		for _, tid := range tids {
			if b.threads[tid] != nil {
				continue
			}
			if seize(tid, traceOptions) != nil {
				continue // exited meanwhile, or already auto-attached
			}
			th := b.addThread(p, tid)
			th.running = true
			seized = append(seized, th)
			added++
		}
		if added == 0 {
			break
		}
	}
	name := threadName(pid, pid)
	b.setProcessContext(p, b.t.AddProcess(pid, nil, name))
	for _, th := range seized {
		th.ctx = b.t.AddThread(p.ctx, th.tid, nil, threadName(pid, th.tid))
	}
	// Stop every thread once: to learn whether the process is in a
	// job-control stop, and to apply whatever Stop asks.
	for _, th := range seized {
		th.wantStop = opts.Stop
		if interrupt(th.tid) == nil {
			th.interrupting = true
		}
	}
	for {
		var next *thread
		for _, th := range p.sortedThreads() {
			if th.running && (th.interrupting || th.newborn) {
				next = th
				break
			}
		}
		if next == nil {
			break
		}
		ws, err := b.waitForAttachStop(next.tid)
		if err != nil {
			b.threadGone(next, target.ExitStatus{})
			continue
		}
		b.handle(waitEvent{next.tid, ws})
	}
	if b.procByPIDLocked(pid) == nil {
		return nil, target.Errorf(target.CodeAlreadyExited, op, id, nil)
	}
	return p.ctx, nil
}

func (b *Backend) procByPIDLocked(pid int) *process {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.procByPID[pid]
}

func attachError(pid int, err error) error {
	id := target.ProcessID(pid)
	switch {
	case errors.Is(err, unix.ESRCH):
		return target.Errorf(target.CodeInvalidContext, "attach", id, err)
	case errors.Is(err, unix.EPERM):
		if st, e := readStatus(pid); e == nil && st.TracerPid != 0 {
			return target.Errorf(target.CodeAlreadyAttached, "attach", id,
				fmt.Errorf("process %d is already traced by process %d: %w", pid, st.TracerPid, err))
		}
		return target.Errorf(target.CodeOther, "attach", id, err)
	}
	return target.Errorf(target.CodeOther, "attach", id, err)
}

// Detach implements target.Backend.
func (b *Backend) Detach(ctx *target.Context) error {
	return b.do("detach", func() error {
		p, err := b.procOf(ctx, "detach")
		if err != nil {
			return err
		}
		return b.detachProcess(p)
	})
}

// detachProcess removes every patch of p and detaches all its threads, leaving
// each as it would be untraced: signals that were about to be delivered are
// delivered, a job-control stop stays in effect (the kernel re-enters it when
// the tracer detaches).
func (b *Backend) detachProcess(p *process) error {
	// 1. Every thread into a ptrace-stop, its pending event settled.
	for round := 0; round < 100; round++ {
		var waiting []*thread
		for _, th := range p.sortedThreads() {
			if !th.running {
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
		if len(waiting) == 0 {
			break
		}
		for _, th := range waiting {
			if b.threads[th.tid] != th {
				continue
			}
			ws, err := b.waitFor(th.tid)
			if err != nil {
				b.threadGone(th, target.ExitStatus{})
				continue
			}
			b.settle(th, ws)
		}
	}
	if b.procByPIDLocked(p.pid) != p {
		return nil // it exited meanwhile
	}
	// Patches of layers above (probes) go first, once. (A second pass used
	// to free a code cache the first had left now and then: its munmap,
	// injected into a thread interrupted just after an int3, met that
	// int3's queued SIGTRAP instead of running; the interrupt stop now takes
	// it, see takeInt3Trap.) What is left is an error, not retried.
	var errs []error
	if err := b.runDetachHooks(p); err != nil {
		errs = append(errs, err)
	}
	// 2. Patches out: int3 bytes (unless the memory is a vfork parent's), debug
	// registers, registers sonde changed.
	if p.memOwner == p {
		// No thread is left in generated code; then the scratch area goes.
		var stopped *thread
		for _, th := range p.sortedThreads() {
			b.translateStop(th)
			if !th.running && stopped == nil {
				stopped = th
			}
		}
		b.unmapScratch(p, stopped)
		p.memMu.Lock()
		p.shadow.Each(func(addr uint64, orig byte) {
			if p.mem != nil {
				p.mem.WriteAt([]byte{orig}, int64(addr))
			}
		})
		p.shadow.Reset()
		p.sw = map[uint64]*swBreakpoint{}
		p.memMu.Unlock()
	}
	for _, th := range p.sortedThreads() {
		if th.hwGen != 0 {
			for i := 0; i < 4; i++ {
				pokeUser(th.tid, debugRegOffset+7*8, 0)
				pokeUser(th.tid, debugRegOffset+uintptr(i)*8, 0)
			}
		}
		th.hwExecHit = false
		if err := th.flushRegs(); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("thread %d: %w", th.tid, err))
		}
		if err := detach(th.tid, th.sig); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("detach thread %d: %w", th.tid, err))
		}
	}
	b.dropProcess(p)
	if p.launched {
		b.reaper.add(p.pid) // sonde stays its parent: reap it when it ends
	}
	if p.ctx != nil {
		b.t.Exited(p.ctx, target.ExitStatus{Detached: true})
	}
	if len(errs) > 0 {
		return target.Errorf(target.CodeOther, "detach", target.ProcessID(p.pid), errors.Join(errs...))
	}
	return nil
}

// settle applies a status met while detaching: the thread stays stopped, with
// its PC moved back if it hit a breakpoint and its signal kept for delivery.
func (b *Backend) settle(th *thread, ws unix.WaitStatus) {
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
		th.interrupting = false
		if th.newborn {
			th.newborn = false
			b.initialStop(th)
		}
		if sig == int(unix.SIGTRAP) {
			b.takeInt3Trap(th) // (or its other status comes in the next round)
		}
	case unix.PTRACE_EVENT_CLONE, unix.PTRACE_EVENT_FORK, unix.PTRACE_EVENT_VFORK:
		b.onNewChild(th, event) // a new thread joins the next round
	case unix.PTRACE_EVENT_EXEC:
		b.onExec(th) // restarts it; the next round stops it again
	case 0:
		if sig == int(unix.SIGTRAP) {
			if si, err := getSiginfo(th.tid); err == nil && !si.fromUser() {
				if si.Code == siKernel {
					pc := th.pc()
					owner := th.proc.memOwner
					owner.memMu.RLock()
					planted := owner.sw[pc-1] != nil || owner.removed[pc-1]
					owner.memMu.RUnlock()
					if planted {
						// Written now, as onInt3 does: a thread the
						// kernel releases re-executes the int3.
						th.rewindPC(pc - 1)
						return
					}
				} else {
					return // a step or debug-register trap of sonde's
				}
			}
		}
		if sig == int(unix.SIGCONT) && th.proc.swallowCont > 0 {
			th.proc.swallowCont--
			return
		}
		th.sig = sig
	}
}

// Terminate implements target.Backend: SIGKILL, then the exit is collected so
// that the Exited events are out when it returns.
func (b *Backend) Terminate(ctx *target.Context) error {
	return b.do("terminate", func() error {
		p, err := b.procOf(ctx, "terminate")
		if err != nil {
			return err
		}
		if err := unix.Kill(p.pid, unix.SIGKILL); err != nil {
			return b.osError("terminate", nil, err)
		}
		// Collect the exit (every status of every thread, in order) so that
		// the Exited events are out when this returns.
		for b.procByPIDLocked(p.pid) == p {
			ev, ok := b.nextEvent(10 * time.Second)
			if !ok {
				return target.Errorf(target.CodeOther, "terminate", ctx.ID(), fmt.Errorf("process %d did not exit after SIGKILL", p.pid))
			}
			b.handle(ev)
		}
		return nil
	})
}

// Signal implements target.Backend.
func (b *Backend) Signal(ctx *target.Context, sig target.Signal) error {
	var err error
	if ctx.IsProcess() {
		err = unix.Kill(ctx.PID(), unix.Signal(sig))
	} else {
		err = tgkill(ctx.PID(), ctx.TID(), int(sig))
	}
	if err != nil {
		return b.osError("signal", nil, err)
	}
	return nil
}

// waitForAttachStop waits for the stop an attach asked of a thread. Under
// load, a thread of a process that creates threads all the time was seen
// never to report it (traced, running, its stop gone): waiting forever hung
// the tracer. Every 2 s the thread is interrupted again; after 30 s it is
// given up.
func (b *Backend) waitForAttachStop(tid int) (unix.WaitStatus, error) {
	for try := 0; ; try++ {
		ws, err := b.waitForUntil(tid, time.Now().Add(2*time.Second))
		if !errors.Is(err, unix.ETIMEDOUT) || try == 15 {
			return ws, err
		}
		interrupt(tid)
	}
}
