package target

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestDefaultTerminating checks the set against signal(7)'s default actions.
func TestDefaultTerminating(t *testing.T) {
	for _, s := range []unix.Signal{unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGABRT, unix.SIGSYS,
		unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGTERM, unix.SIGHUP, unix.SIGALRM, unix.SIGPIPE, unix.SIGKILL, 34, 64} {
		if !DefaultTerminating.Has(Signal(s)) {
			t.Errorf("%s should terminate by default", Signal(s).Name())
		}
	}
	for _, s := range []unix.Signal{unix.SIGCHLD, unix.SIGURG, unix.SIGWINCH, unix.SIGCONT, unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU} {
		if DefaultTerminating.Has(Signal(s)) {
			t.Errorf("%s should not terminate by default", Signal(s).Name())
		}
	}
	d := SignalDispositions{Caught: SignalSet(0).With(Signal(unix.SIGSEGV)), Ignored: SignalSet(0).With(Signal(unix.SIGPIPE))}
	if d.Fatal(Signal(unix.SIGSEGV)) || d.Fatal(Signal(unix.SIGPIPE)) || !d.Fatal(Signal(unix.SIGBUS)) || d.Fatal(Signal(unix.SIGCHLD)) {
		t.Errorf("Fatal: %+v", d)
	}
}
