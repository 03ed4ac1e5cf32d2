package target

import "golang.org/x/sys/unix"

// A process's signal dispositions: which signals it has a handler for and
// which it ignores. A front end uses them to stop only on the signals that
// would kill the program (what lldb and gdb do with a fatal signal the
// program does not handle) and to let the handled ones pass.

// SignalDispositions is what a process does with each signal at one moment:
// Caught holds the signals with a handler installed (sigaction with a
// function), Ignored those set to SIG_IGN. A signal in neither takes its
// default action (signal(7)).
type SignalDispositions struct {
	Caught  SignalSet
	Ignored SignalSet
}

// Fatal reports whether delivering sig now would end the process: it is
// neither caught nor ignored and its default action terminates (Term or
// Core). SIGKILL counts, though no debugger can intercept it.
func (d SignalDispositions) Fatal(sig Signal) bool {
	return !d.Caught.Has(sig) && !d.Ignored.Has(sig) && DefaultTerminating.Has(sig)
}

// DefaultTerminating is the set of signals whose default action (signal(7))
// terminates the process, with or without a core: every signal but those
// whose default is to ignore (SIGCHLD, SIGURG, SIGWINCH), to stop (SIGSTOP,
// SIGTSTP, SIGTTIN, SIGTTOU) or to continue (SIGCONT). Real-time signals
// (32..64) terminate by default.
var DefaultTerminating = func() SignalSet {
	s := ^SignalSet(0)
	for _, sig := range []unix.Signal{unix.SIGCHLD, unix.SIGURG, unix.SIGWINCH,
		unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU, unix.SIGCONT} {
		s = s.Without(Signal(sig))
	}
	return s
}()

// SignalDispositionReader is implemented by backends that can read a live
// process's signal dispositions (ptrace: SigCgt and SigIgn of
// /proc/PID/status). A core has no such record: the kernel writes the
// pending and blocked masks in NT_PRSTATUS but not the handlers, so the
// core backend does not implement it.
type SignalDispositionReader interface {
	SignalDispositions(proc *Context) (SignalDispositions, error)
}

// SignalDispositions returns what c's process does with each signal now,
// read afresh at each call (a handler installed since the last stop
// counts). A backend that cannot know (a core) returns an error with
// CodeUnsupported.
func (c *Context) SignalDispositions() (SignalDispositions, error) {
	if r, ok := c.target.backend.(SignalDispositionReader); ok {
		return r.SignalDispositions(c.Process())
	}
	return SignalDispositions{}, Errorf(CodeUnsupported, "signal dispositions", c.id, nil)
}

// PassHandled returns the process's pass-if-handled set (SetPassHandled).
func (c *Context) PassHandled() SignalSet {
	p := c.Process()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.passHandled
}

// SetPassHandled sets the signals of c's process that are passed without a
// stop when the process catches or ignores them at the moment they arrive
// (the backend checks the dispositions then, so a handler installed late
// counts); one that would kill the process stops as usual (ReasonSignal
// or ReasonException). The don't-stop set wins over it: a signal in both
// never stops. Backends without dispositions stop on every signal in it.
func (c *Context) SetPassHandled(set SignalSet) {
	p := c.Process()
	p.mu.Lock()
	p.passHandled = set
	p.mu.Unlock()
	c.target.emit(Event{Kind: EventChanged, Context: p})
}
