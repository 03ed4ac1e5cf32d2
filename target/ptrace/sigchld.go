package ptrace

import (
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelSigaction is the kernel's struct sigaction for rt_sigaction(2) on
// Linux x86-64 (and arm64): handler, flags, restorer, mask.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const saNoCldStop = 0x1 // SA_NOCLDSTOP

var quietOnce sync.Once

// quietStops sets SA_NOCLDSTOP on this process's SIGCHLD action, keeping its
// handler: a tracee's every ptrace-stop otherwise sends the tracer a SIGCHLD,
// which Linux delivers to a thread of sonde — mostly the tracer thread, in
// the middle of handling that very stop — only for the runtime's handler to
// ignore it (~3 µs of every breakpoint hit). The flag stops only those
// signals: a child's exit still sends SIGCHLD, and waiting threads are woken
// by every stop as before (the kernel wakes them whether or not it signals).
// The Go runtime installed the handler; it re-installs it (without the flag)
// only if a program asks os/signal for SIGCHLD, which then simply gets the
// signals again.
func quietStops() error {
	var err error
	quietOnce.Do(func() {
		var act kernelSigaction
		if _, _, e := syscall.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), 0,
			uintptr(unsafe.Pointer(&act)), unsafe.Sizeof(act.mask), 0, 0); e != 0 {
			err = e
			return
		}
		if act.flags&saNoCldStop != 0 {
			return
		}
		act.flags |= saNoCldStop
		if _, _, e := syscall.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD),
			uintptr(unsafe.Pointer(&act)), 0, unsafe.Sizeof(act.mask), 0, 0); e != 0 {
			err = e
		}
	})
	return err
}

// sigchldFlags returns the flags of this process's SIGCHLD action (tests).
func sigchldFlags() (uint64, error) {
	var act kernelSigaction
	if _, _, e := syscall.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), 0,
		uintptr(unsafe.Pointer(&act)), unsafe.Sizeof(act.mask), 0, 0); e != 0 {
		return 0, e
	}
	return act.flags, nil
}
