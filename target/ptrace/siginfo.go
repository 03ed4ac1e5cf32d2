package ptrace

import (
	"encoding/binary"

	"github.com/sondedbg/sonde/target"
	"golang.org/x/sys/unix"
)

// siginfo is the part of the kernel's siginfo_t (x86-64 layout) that sonde
// uses. x/sys exposes the union as opaque padding, so it is decoded here.
type siginfo struct {
	Signo int32
	Errno int32
	Code  int32
	// Pid and Uid are valid for signals sent by kill/tgkill and for SIGCHLD.
	Pid, Uid int32
	// Addr is the faulting address for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGTRAP.
	Addr uint64
	// Status is the exit status or signal for SIGCHLD.
	Status int32
}

// si_code values that matter for telling SIGTRAPs apart.
const (
	siUser     = 0    // kill(2)
	siKernel   = 0x80 // SI_KERNEL: int3 on x86
	siTkill    = -6   // tgkill(2)
	trapBrkpt  = 1    // TRAP_BRKPT
	trapTrace  = 2    // TRAP_TRACE: single-step
	trapHWBkpt = 4    // TRAP_HWBKPT: debug register hit
)

// decodeSiginfo decodes a raw siginfo_t; short input decodes as zeros beyond
// its end (the kernel always supplies 128 bytes).
func decodeSiginfo(b []byte) siginfo {
	var raw [128]byte
	copy(raw[:], b)
	le := binary.LittleEndian
	si := siginfo{
		Signo: int32(le.Uint32(raw[0:])),
		Errno: int32(le.Uint32(raw[4:])),
		Code:  int32(le.Uint32(raw[8:])),
	}
	switch {
	case si.Code <= 0 || si.Signo == int32(unix.SIGCHLD):
		si.Pid = int32(le.Uint32(raw[16:]))
		si.Uid = int32(le.Uint32(raw[20:]))
		si.Status = int32(le.Uint32(raw[24:]))
	default:
		si.Addr = le.Uint64(raw[16:])
	}
	return si
}

// fromUser reports whether a process sent the signal (kill, tgkill, sigqueue)
// rather than the kernel raising it for a fault or trap.
func (s siginfo) fromUser() bool { return s.Code <= 0 }

// faultText describes a kernel-generated fault for an exception stop
// (target.FaultText, which the core backend words its faults with too).
func (s siginfo) faultText() string {
	return target.FaultText(target.Signal(s.Signo), s.Code, s.Addr)
}

// model is the siginfo as the model's SuspendReason carries it: the fault
// address only for a signal the kernel raised for a fault.
func (s siginfo) model() *target.SigInfo {
	out := &target.SigInfo{Code: s.Code}
	if !s.fromUser() {
		switch unix.Signal(s.Signo) {
		case unix.SIGSEGV, unix.SIGBUS, unix.SIGILL, unix.SIGFPE, unix.SIGTRAP:
			out.Addr, out.HasAddr = s.Addr, true
		}
	}
	return out
}
