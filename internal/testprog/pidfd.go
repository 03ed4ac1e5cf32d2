package testprog

import (
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Proc names a process a test started by a pidfd, opened while the process
// is known to be the test's (alive: just started, or stopped under sonde).
// A pid saved for later names whatever process has that number by then: once
// the test's process exited and was reaped (by os/exec's Wait, or by sonde's
// tracer, which waits for its tracees), the kernel may give the number to
// another process (pid_max is 32768 here), another engineer's or the
// machinery's. A signal sent through the pidfd reaches the test's process or
// nobody (ESRCH once it is gone).
//
// An *os.Process from os/exec needs none of this: Go holds a pidfd for the
// processes it starts (cmd.Process.Signal, cmd.Process.Kill). Proc is for
// processes known by number only: those a target.Target launched.
type Proc struct {
	pid int
	mu  sync.Mutex
	fd  int // -1 once closed
}

// OpenProc opens a pidfd for pid, failing the test if it cannot (the process
// is already gone, or the kernel has no pidfds).
func OpenProc(tb testing.TB, pid int) *Proc {
	tb.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		tb.Fatalf("pidfd of process %d: %v", pid, err)
	}
	p := &Proc{pid: pid, fd: fd}
	tb.Cleanup(p.Close)
	return p
}

// KillAtCleanup SIGKILLs process pid when the test ends, if it is still
// the process it is now; it returns the Proc, whose Kill may come earlier.
// Some test programs loop forever: a test leaves none of them running.
func KillAtCleanup(tb testing.TB, pid int) *Proc {
	tb.Helper()
	p := OpenProc(tb, pid)
	tb.Cleanup(p.Kill) // runs before OpenProc's Close (cleanups run last first)
	return p
}

// PID is the process's number (valid for messages and /proc while the
// process lives).
func (p *Proc) PID() int { return p.pid }

// Signal sends sig to the process if it is still the one the pidfd was
// opened for; ESRCH when it is gone (exited, whether reaped or not).
func (p *Proc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd < 0 {
		return syscall.ESRCH
	}
	return unix.PidfdSendSignal(p.fd, sig, nil, 0)
}

// Kill sends SIGKILL (see Signal), ignoring a process already gone.
func (p *Proc) Kill() { p.Signal(syscall.SIGKILL) }

// Close releases the pidfd; Signal then fails with ESRCH.
func (p *Proc) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd >= 0 {
		unix.Close(p.fd)
		p.fd = -1
	}
}
