package ptrace

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// An interrupt stop can hide a breakpoint hit. PTRACE_INTERRUPT makes the
// thread stop on its next way back to user mode; if that way back is from an
// int3 of sonde's, the int3 has run (the pc is one past it, inside the
// instruction under it) and its SIGTRAP waits in the thread's signal queue,
// but the kernel reports the interrupt's PTRACE_EVENT_STOP first: it handles
// the interrupt before it dequeues signals. Whatever next lets the thread go
// — a step, an injected system call, a detach — meets that SIGTRAP instead:
// an injected call "ends" where it began (a probe's code cache or the
// displaced-stepping area stayed mapped at detach), and a thread detached at
// the pc one past the int3 executed the rest of an instruction and crashed.
//
// takeInt3Trap settles such a thread at the stop itself: the queued SIGTRAP
// is taken out (the thread is let go into its signal-delivery-stop, which
// comes before it can run any instruction, and the signal is dropped there)
// and the pc goes back onto the breakpoint, so the thread is exactly as if
// the interrupt had come just before the int3, which it executes again when
// it runs. Callers: every place an interrupt stop is accepted as the
// thread's stop (onEventStop for a suspend, stopOthers, detach's settle).
//
// It returns false when the thread stopped for something else instead: that
// status waits at the head of b.deferred, and the thread counts as running
// until it is handled.
func (b *Backend) takeInt3Trap(th *thread) bool {
	if th.running {
		return true
	}
	pc := th.pc()
	if pc == 0 {
		return true // registers unreadable: gone, its exit follows
	}
	owner := th.proc.memOwner
	owner.memMu.RLock()
	ours := owner.sw[pc-1] != nil || owner.removed[pc-1]
	owner.memMu.RUnlock()
	if !ours || !queuedInt3Trap(th.tid) {
		return true
	}
	if th.flushRegs() != nil || cont(th.tid, 0) != nil {
		return true
	}
	th.invalidateRegs()
	ws, err := b.waitFor(th.tid)
	if err != nil {
		th.running = true // gone, its status taken elsewhere
		return false
	}
	if ws.Stopped() && ws.StopSignal() == unix.SIGTRAP && int(ws)>>16 == 0 {
		if si, err := getSiginfo(th.tid); err == nil && si.Code == siKernel {
			b.dstats.int3TrapsTaken++
			th.rewindPC(th.pc() - 1)
			return true
		}
	}
	b.deferred = append([]waitEvent{{th.tid, ws}}, b.deferred...)
	th.running = true
	return false
}

// peekSiginfoArgs is the kernel's struct ptrace_peeksiginfo_args.
type peekSiginfoArgs struct {
	off   uint64
	flags uint32 // 0: the thread's own queue; PTRACE_PEEKSIGINFO_SHARED: the process's
	nr    int32
}

// queuedInt3Trap reports whether an int3's SIGTRAP (si_code SI_KERNEL)
// waits in stopped thread tid's own signal queue (PTRACE_PEEKSIGINFO looks
// without dequeuing).
func queuedInt3Trap(tid int) bool {
	const n = 8
	var buf [n * 128]byte
	args := peekSiginfoArgs{nr: n}
	got, _, e := unix.RawSyscall6(unix.SYS_PTRACE, unix.PTRACE_PEEKSIGINFO, uintptr(tid),
		uintptr(unsafe.Pointer(&args)), uintptr(unsafe.Pointer(&buf[0])), 0, 0)
	if e != 0 {
		return false
	}
	for i := 0; i < int(got) && i < n; i++ {
		if si := decodeSiginfo(buf[i*128 : (i+1)*128]); si.Signo == int32(unix.SIGTRAP) && si.Code == siKernel {
			return true
		}
	}
	return false
}

// answeredInterrupt notes that a step of sonde's own (an injected system
// call, a step out of generated code) met th's PTRACE_INTERRUPT stop and
// stepped again: the interrupt is answered. th.interrupting must say so, or
// every later stop of the thread would wait for an interrupt stop that
// never comes (stopOthers sends none to a thread it thinks is being
// interrupted: seen as Halt giving up after 100 rounds, each a breakpoint
// hit). Called once the step is done: a suspend still waiting for the
// thread gets a new interrupt, whose stop comes when the thread next runs.
func (b *Backend) answeredInterrupt(th *thread) {
	th.interrupting = false
	if th.wantStop && interrupt(th.tid) == nil {
		th.interrupting = true
	}
}
