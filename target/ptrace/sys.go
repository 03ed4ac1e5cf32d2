package ptrace

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Raw ptrace requests. x/sys wraps some of these, but without the arguments
// sonde needs (SEIZE with options, CONT/STEP/DETACH with a signal, register
// sets by note type), and each wrapper costs an extra copy; one helper serves all.

const (
	ntPRStatus  = 1     // NT_PRSTATUS: struct user_regs_struct
	ntX86XState = 0x202 // NT_X86_XSTATE: the XSAVE area

	// offsetof(struct user, u_debugreg) on x86-64: where PEEKUSER/POKEUSER find DR0-DR7.
	debugRegOffset = 848

	// The ptrace options every tracee gets, set atomically with PTRACE_SEIZE.
	// Fork and vfork children are always caught, so that breakpoints can be
	// removed from their copy of memory before they run even when they are
	// not followed.
	traceOptions = unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK |
		unix.PTRACE_O_TRACEVFORKDONE |
		unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_TRACEEXIT | unix.PTRACE_O_TRACESYSGOOD

	// PTRACE_EVENT_STOP: group-stop, PTRACE_INTERRUPT and new-child stops of a seized tracee.
	eventStop = 128

	addrNoRandomize = 0x0040000 // personality(2) ADDR_NO_RANDOMIZE
)

func ptrace(req int, tid int, addr, data uintptr) error {
	_, _, e := unix.RawSyscall6(unix.SYS_PTRACE, uintptr(req), uintptr(tid), addr, data, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func seize(tid int, opts int) error { return ptrace(unix.PTRACE_SEIZE, tid, 0, uintptr(opts)) }
func interrupt(tid int) error       { return ptrace(unix.PTRACE_INTERRUPT, tid, 0, 0) }
func listen(tid int) error          { return ptrace(unix.PTRACE_LISTEN, tid, 0, 0) }
func cont(tid, sig int) error       { return ptrace(unix.PTRACE_CONT, tid, 0, uintptr(sig)) }
func singleStep(tid, sig int) error { return ptrace(unix.PTRACE_SINGLESTEP, tid, 0, uintptr(sig)) }
func detach(tid, sig int) error     { return ptrace(unix.PTRACE_DETACH, tid, 0, uintptr(sig)) }

func eventMsg(tid int) (uint64, error) {
	var v uint64
	err := ptrace(unix.PTRACE_GETEVENTMSG, tid, 0, uintptr(unsafe.Pointer(&v)))
	return v, err
}

// getRegSet reads register set nt into buf and returns the bytes the kernel filled.
func getRegSet(tid int, nt int, buf []byte) (int, error) {
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	if err := ptrace(unix.PTRACE_GETREGSET, tid, uintptr(nt), uintptr(unsafe.Pointer(&iov))); err != nil {
		return 0, err
	}
	return int(iov.Len), nil
}

func setRegSet(tid int, nt int, buf []byte) error {
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	return ptrace(unix.PTRACE_SETREGSET, tid, uintptr(nt), uintptr(unsafe.Pointer(&iov)))
}

func peekUser(tid int, off uintptr) (uint64, error) {
	var v uint64
	// PTRACE_PEEKUSR at the syscall level stores the word through data.
	err := ptrace(unix.PTRACE_PEEKUSR, tid, off, uintptr(unsafe.Pointer(&v)))
	return v, err
}

func pokeUser(tid int, off uintptr, v uint64) error {
	return ptrace(unix.PTRACE_POKEUSR, tid, off, uintptr(v))
}

func getSiginfo(tid int) (siginfo, error) {
	var raw [128]byte
	if err := ptrace(unix.PTRACE_GETSIGINFO, tid, 0, uintptr(unsafe.Pointer(&raw[0]))); err != nil {
		return siginfo{}, err
	}
	return decodeSiginfo(raw[:]), nil
}

// wait4 waits for tid with __WALL, retrying on EINTR.
//
// With WNOHANG it never blocks, and it is the tracer thread's poll for
// stops: then it is a raw system call, which the Go scheduler does not
// hear about. Entering a system call the ordinary way wakes the runtime's
// monitor thread when it sleeps, and it then polls every 20 µs for a
// millisecond or so: on a 2-CPU machine a thread that takes turns with the
// tracer, the program and the client (traced after a breakpoint stop: four
// wake-ups of it between the stop and the stack's first reply).
func wait4(tid int, flags int) (int, unix.WaitStatus, error) {
	var ws unix.WaitStatus
	for {
		var pid int
		var err error
		if flags&unix.WNOHANG != 0 {
			r, _, e := unix.RawSyscall6(unix.SYS_WAIT4, uintptr(tid), uintptr(unsafe.Pointer(&ws)),
				uintptr(flags|unix.WALL), 0, 0, 0)
			pid = int(r)
			if e != 0 {
				err = e
			}
		} else {
			pid, err = unix.Wait4(tid, &ws, flags|unix.WALL, nil)
		}
		if err == unix.EINTR {
			continue
		}
		return pid, ws, err
	}
}

// waitAnyNoWait blocks (unless flags has WNOHANG: then it returns 0 at once)
// until some child (tracee or not) has a state change and
// returns its pid without consuming the change (WNOWAIT), so that children that
// are not tracees stay for their owner to reap.
func waitAnyNoWait(flags int) (int, error) {
	var raw [128]byte
	call := unix.Syscall6
	if flags&unix.WNOHANG != 0 {
		call = unix.RawSyscall6 // it does not block: see wait4
	}
	for {
		_, _, e := call(unix.SYS_WAITID, unix.P_ALL, 0, uintptr(unsafe.Pointer(&raw[0])),
			uintptr(unix.WEXITED|unix.WNOWAIT|unix.WALL|flags), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(int32(binary.LittleEndian.Uint32(raw[16:]))), nil
	}
}

func tgkill(pid, tid, sig int) error { return unix.Tgkill(pid, tid, unix.Signal(sig)) }

func personality(p uintptr) (uintptr, error) {
	r, _, e := unix.RawSyscall(unix.SYS_PERSONALITY, p, 0, 0)
	if e != 0 {
		return 0, e
	}
	return r, nil
}
