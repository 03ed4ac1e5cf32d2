package target

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// RunState is where a context is in its life.
type RunState int

const (
	StateRunning RunState = iota
	StateStopped
	StateExiting // the thread has begun to exit (PTRACE_EVENT_EXIT); it will not run again
	StateExited
)

func (s RunState) String() string {
	switch s {
	case StateRunning:
		return "running"
	case StateStopped:
		return "stopped"
	case StateExiting:
		return "exiting"
	case StateExited:
		return "exited"
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// ReasonKind says why a thread is stopped.
type ReasonKind int

const (
	ReasonUser          ReasonKind = iota // a client asked (suspend, stop at entry)
	ReasonStep                            // a step finished
	ReasonBreakpoint                      // one or more breakpoints were hit
	ReasonWatchpoint                      // a data watchpoint triggered
	ReasonSignal                          // a signal not in the don't-stop set arrived
	ReasonException                       // a fault the program cannot continue from as is
	ReasonSharedLibrary                   // a shared library was loaded or unloaded
	ReasonContainer                       // another thread of the stop group stopped
	ReasonEvent                           // a process event: fork, exec, clone (with FollowForks etc.)
	ReasonError                           // the backend could not keep the thread running
)

// TCFName is the reason string TCF clients expect ("Breakpoint", "Step", ...).
func (k ReasonKind) TCFName() string {
	switch k {
	case ReasonUser:
		return "Suspended"
	case ReasonStep:
		return "Step"
	case ReasonBreakpoint:
		return "Breakpoint"
	case ReasonWatchpoint:
		return "Watchpoint"
	case ReasonSignal:
		return "Signal"
	case ReasonException:
		return "Exception"
	case ReasonSharedLibrary:
		return "Shared Library"
	case ReasonContainer:
		return "Container"
	case ReasonEvent:
		return "Event"
	case ReasonError:
		return "Error"
	}
	return "Suspended"
}

func (k ReasonKind) String() string { return k.TCFName() }

// SuspendReason describes a stop.
type SuspendReason struct {
	Kind        ReasonKind
	Breakpoints []*Breakpoint // ReasonBreakpoint, ReasonWatchpoint: the ones hit
	DataAddress uint64        // ReasonWatchpoint: the accessed address, when known
	Signal      Signal        // the signal behind the stop, 0 if none
	Event       string        // ReasonEvent: "fork", "vfork", "clone", "exec"
	Message     string        // ReasonError, ReasonException: what went wrong
	// SigInfo is the siginfo of Signal when the backend has it (a core's
	// NT_SIGINFO), nil otherwise.
	SigInfo *SigInfo
}

// SigInfo is what a siginfo_t says of a signal beyond its number.
type SigInfo struct {
	Code int32 // si_code: > 0 the kernel raised it for a fault; <= 0 sent (SI_USER 0, SI_TKILL -6, ...)
	// Addr is si_addr, the address a fault touched; meaningful when
	// HasAddr (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP raised by the kernel).
	Addr    uint64
	HasAddr bool
}

// Signal is a Linux signal number.
type Signal int

// Name is the signal's constant name, e.g. "SIGSEGV".
func (s Signal) Name() string {
	if n := unix.SignalName(syscall.Signal(s)); n != "" {
		return n
	}
	if s >= 34 && s <= 64 {
		return fmt.Sprintf("SIGRT%d", int(s)-34)
	}
	return fmt.Sprintf("SIG%d", int(s))
}

// Description is the human text, e.g. "segmentation fault".
func (s Signal) Description() string { return syscall.Signal(s).String() }

// SignalSet is a set of signals 1..64 (bit n-1 for signal n), the same encoding
// TCF uses for Processes.setSignalMask.
type SignalSet uint64

func (s SignalSet) Has(sig Signal) bool {
	return sig >= 1 && sig <= 64 && s&(1<<(uint(sig)-1)) != 0
}
func (s SignalSet) With(sig Signal) SignalSet {
	if sig < 1 || sig > 64 {
		return s
	}
	return s | 1<<(uint(sig)-1)
}
func (s SignalSet) Without(sig Signal) SignalSet {
	if sig < 1 || sig > 64 {
		return s
	}
	return s &^ (1 << (uint(sig) - 1))
}

// DefaultDontStop is the TCF agent's default don't-stop set: SIGCHLD, SIGPIPE, SIGWINCH.
var DefaultDontStop = SignalSet(0).With(Signal(unix.SIGCHLD)).With(Signal(unix.SIGPIPE)).With(Signal(unix.SIGWINCH))

// ExitStatus says how a process or thread ended.
type ExitStatus struct {
	Code       int    // exit code, when Signal == 0
	Signal     Signal // the killing signal, or 0
	CoreDumped bool
	// Detached means the process did not end: sonde let go of it (detach,
	// Close) and it runs on untraced. Its contexts are gone all the same.
	Detached bool
}

// TCFCode is the exit code TCF reports: the code, or minus the killing signal.
func (e ExitStatus) TCFCode() int {
	if e.Signal != 0 {
		return -int(e.Signal)
	}
	return e.Code
}

func (e ExitStatus) String() string {
	if e.Detached {
		return "detached"
	}
	if e.Signal != 0 {
		s := "killed by " + e.Signal.Name()
		if e.CoreDumped {
			s += " (core dumped)"
		}
		return s
	}
	return fmt.Sprintf("exited with code %d", e.Code)
}
