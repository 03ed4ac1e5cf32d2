package ptrace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/sondedbg/sonde/target"
)

// Signal dispositions come from the SigCgt and SigIgn lines of
// /proc/PID/status, read when asked (and, for the pass-if-handled set,
// when a signal arrives), so a handler the program installed a moment ago
// counts. Handlers are per process: any thread's status has the same masks.

// SignalDispositions implements target.SignalDispositionReader.
func (b *Backend) SignalDispositions(proc *target.Context) (target.SignalDispositions, error) {
	p, err := b.procOf(proc, "signal dispositions")
	if err != nil {
		return target.SignalDispositions{}, err
	}
	d, err := readDispositions(p.pid)
	if err != nil {
		return d, target.Errorf(target.CodeOther, "signal dispositions", proc.ID(), err)
	}
	return d, nil
}

// readDispositions reads the caught and ignored sets of task tid.
func readDispositions(tid int) (target.SignalDispositions, error) {
	st, err := readStatus(tid)
	if err != nil {
		return target.SignalDispositions{}, err
	}
	if !st.HasSigMasks {
		return target.SignalDispositions{}, fmt.Errorf("/proc/%d/status has no SigCgt/SigIgn", tid)
	}
	return target.SignalDispositions{Caught: target.SignalSet(st.SigCgt), Ignored: target.SignalSet(st.SigIgn)}, nil
}

// passesHandled reports whether sig, arriving at th, is in its process's
// pass-if-handled set and the process catches or ignores it now. When the
// dispositions cannot be read the signal stops: a stop too many is better
// than a crash the user never sees.
func passesHandled(th *thread, sig target.Signal) bool {
	if !th.proc.ctx.PassHandled().Has(sig) {
		return false
	}
	d, err := th.dispositions()
	if err != nil {
		return false
	}
	return d.Caught.Has(sig) || d.Ignored.Has(sig)
}

// dispositions reads the thread's status file through the descriptor it
// keeps open: re-reading a /proc file from offset 0 gives its current
// contents and saves the path walk, open and close of each signal (about
// 40% of the read). Tracer thread only.
func (th *thread) dispositions() (target.SignalDispositions, error) {
	if th.status == nil {
		f, err := os.Open("/proc/" + strconv.Itoa(th.tid) + "/status")
		if err != nil {
			return target.SignalDispositions{}, err
		}
		th.status = f
	}
	var buf [4096]byte
	n, err := th.status.ReadAt(buf[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return target.SignalDispositions{}, err
	}
	if n == len(buf) {
		// Longer than any status file: read it whole.
		return readDispositions(th.tid)
	}
	st, err := parseStatus(buf[:n])
	if err != nil {
		return target.SignalDispositions{}, err
	}
	if !st.HasSigMasks {
		return target.SignalDispositions{}, fmt.Errorf("/proc/%d/status has no SigCgt/SigIgn", th.tid)
	}
	return target.SignalDispositions{Caught: target.SignalSet(st.SigCgt), Ignored: target.SignalSet(st.SigIgn)}, nil
}
