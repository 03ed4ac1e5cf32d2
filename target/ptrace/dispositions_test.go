package ptrace

import (
	"encoding/binary"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sondedbg/sonde/target"
	"golang.org/x/sys/unix"
)

// readU64 reads a uint64 global of the stopped program.
func readU64(t *testing.T, p *target.Context, path, name string) uint64 {
	t.Helper()
	var b [8]byte
	if n, err := p.ReadMemory(symbol(t, p, path, name), b[:]); n != 8 {
		t.Fatalf("read %s: %v", name, err)
	}
	return binary.LittleEndian.Uint64(b[:])
}

// TestSignalDispositions checks sonde's view of the caught and ignored
// signals against the program's own (sigaction on every signal) at two
// checkpoints, the second after a handler was installed; and that a
// pass-if-handled signal stops only when it would kill the program.
func TestSignalDispositions(t *testing.T) {
	path := build(t, "tp_dispositions.c")
	usr1, usr2, hup := target.Signal(unix.SIGUSR1), target.Signal(unix.SIGUSR2), target.Signal(unix.SIGHUP)
	urg, segv := target.Signal(unix.SIGURG), target.Signal(unix.SIGSEGV)
	checkpoint := func(t *testing.T, r *recorder, i *int, p *target.Context) target.SignalDispositions {
		t.Helper()
		e := r.wait(t, i, "checkpoint", isStop(p))
		if e.Reason.Kind != target.ReasonSignal || e.Reason.Signal != urg {
			t.Fatalf("stop %s, want the checkpoint's SIGURG", describe(e))
		}
		d, err := p.SignalDispositions()
		if err != nil {
			t.Fatal(err)
		}
		caught, ignored := readU64(t, p, path, "own_caught"), readU64(t, p, path, "own_ignored")
		if uint64(d.Caught) != caught || uint64(d.Ignored) != ignored {
			t.Fatalf("sonde: caught %#x ignored %#x; the program: caught %#x ignored %#x", d.Caught, d.Ignored, caught, ignored)
		}
		return d
	}
	for _, c := range []struct {
		arg  string
		last target.Signal // the fatal signal that ends the run, 0 for exit 0
	}{{"", 0}, {"usr2", usr2}, {"segv", segv}} {
		t.Run("end="+c.arg, func(t *testing.T) {
			tg, r := newTarget(t)
			p := launch(t, tg, path, c.arg)
			i := 0
			r.wait(t, &i, "entry", isStop(p))
			p.Resume(target.ResumeContinue, target.ResumeOptions{})
			d := checkpoint(t, r, &i, p)
			if !d.Caught.Has(usr1) || !d.Ignored.Has(hup) || d.Caught.Has(usr2) || !d.Fatal(usr2) || d.Fatal(usr1) || d.Fatal(hup) {
				t.Fatalf("first checkpoint: %+v", d)
			}
			// From here on, every terminating signal stops only if fatal.
			p.SetPassHandled(target.DefaultTerminating)
			p.Resume(target.ResumeContinue, target.ResumeOptions{})
			d = checkpoint(t, r, &i, p)
			if !d.Caught.Has(usr2) || d.Fatal(usr2) {
				t.Fatalf("second checkpoint: the SIGUSR2 handler installed since is not seen: %+v", d)
			}
			p.Resume(target.ResumeContinue, target.ResumeOptions{})
			if c.last != 0 {
				e := r.wait(t, &i, "fatal signal", isStop(p))
				if e.Reason.Signal != c.last {
					t.Fatalf("stop %s, want signal %d", describe(e), c.last)
				}
				if c.last == segv {
					if e.Reason.Kind != target.ReasonException || e.Reason.SigInfo == nil || !e.Reason.SigInfo.HasAddr || e.Reason.SigInfo.Addr != 0x10 {
						t.Fatalf("SIGSEGV stop %s, siginfo %+v: want an exception at 0x10", describe(e), e.Reason.SigInfo)
					}
				}
				p.Resume(target.ResumeContinue, target.ResumeOptions{})
			}
			e := r.wait(t, &i, "exit", func(e target.Event) bool { return isStop(p)(e) || isExit(p)(e) })
			if e.Kind != target.EventExited || e.Exit.Signal != c.last || (c.last == 0 && e.Exit.Code != 0) {
				t.Fatalf("end %s exit %v: want death by signal %d (0: exit 0, both handlers run once)", describe(e), e.Exit, c.last)
			}
			// The status descriptor kept for the signals is closed with the thread.
			pid := p.PID()
			tg.Close()
			if fds := statusFDs(pid); len(fds) != 0 {
				t.Errorf("descriptors left open on /proc/%d/status: %v", pid, fds)
			}
		})
	}
}

// statusFDs lists this process's descriptors open on /proc/PID/status.
func statusFDs(pid int) []string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && l == "/proc/"+strconv.Itoa(pid)+"/status" {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestParseStatusSigMasks checks the SigCgt/SigIgn lines are read as hex
// masks, and their absence is told apart from empty masks.
func TestParseStatusSigMasks(t *testing.T) {
	base := "Name:\tx\nState:\tS\nTgid:\t1\nTracerPid:\t0\n"
	st, err := parseStatus([]byte(base + "SigIgn:\t0000000000001000\nSigCgt:\t0000000180000200\n"))
	if err != nil || !st.HasSigMasks || st.SigIgn != 0x1000 || st.SigCgt != 0x180000200 {
		t.Fatalf("%+v %v", st, err)
	}
	if st, err := parseStatus([]byte(base)); err != nil || st.HasSigMasks {
		t.Fatalf("no masks: %+v %v", st, err)
	}
	if _, err := parseStatus([]byte(base + "SigCgt:\tzz\n")); err == nil {
		t.Fatal("bad SigCgt accepted")
	}
}

// BenchmarkReadDispositions is the cost a pass-if-handled signal adds to
// its stop: one read of /proc/PID/status.
func BenchmarkReadDispositions(b *testing.B) {
	pid := os.Getpid()
	for i := 0; i < b.N; i++ {
		if _, err := readDispositions(pid); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPassCaughtSignal is the cost of a caught signal that passes
// without a stop: in the don't-stop set (before: the signals filter off
// passed everything) and in the pass-if-handled set (now: the dispositions
// are read as it arrives). ns/signal over a run of 2000 SIGUSR1s.
func BenchmarkPassCaughtSignal(b *testing.B) {
	path := build(b, "tp_dispositions.c")
	usr1 := target.SignalSet(0).With(target.Signal(unix.SIGUSR1))
	const n = 2000
	for _, c := range []struct {
		name                  string
		dontStop, passHandled target.SignalSet
	}{{"dontStop", target.DefaultDontStop | usr1, 0}, {"passHandled", target.DefaultDontStop, usr1}} {
		b.Run(c.name, func(b *testing.B) {
			tg, r := newTarget(b)
			i := 0
			var total time.Duration
			for k := 0; k < b.N; k++ {
				p := launch(b, tg, path, "raise", strconv.Itoa(n))
				r.wait(b, &i, "entry", isStop(p))
				p.SetSignalMasks(c.dontStop, 0)
				p.SetPassHandled(c.passHandled)
				start := time.Now()
				p.Resume(target.ResumeContinue, target.ResumeOptions{})
				e := r.waitFor(b, &i, "exit", time.Minute, func(e target.Event) bool { return isStop(p)(e) || isExit(p)(e) })
				total += time.Since(start)
				if e.Kind != target.EventExited || e.Exit.Code != 0 {
					b.Fatalf("%s: want exit 0 without a stop", describe(e))
				}
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*n), "ns/signal")
		})
	}
}
