package ptrace

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/translate"
)

// dstepRun is one run of tp_dstep under sonde with eventpoints (internal
// breakpoints whose handler lets the thread go on) on the named symbols, so
// that every hit is passed by the backend without a client round trip.
type dstepRun struct {
	stdout string
	exit   target.ExitStatus
	hits   int64
	stats  displacedStats
	events []target.Event
	syms   map[string]uint64
}

func runDstep(t *testing.T, path string, args []string, syms []string, setup func(*Backend), during func(p *target.Context)) dstepRun {
	return runDstepHook(t, path, args, syms, setup, during, nil)
}

func runDstepHook(t *testing.T, path string, args []string, syms []string, setup func(*Backend), during func(p *target.Context), hook translate.RestoreFunc) dstepRun {
	t.Helper()
	tg, r := newTarget(t)
	b := tg.Backend().(*Backend)
	if setup != nil {
		setup(b)
	}
	p, pio, err := tg.Launch(target.LaunchOptions{Path: path, Argv: append([]string{path}, args...), StopAtEntry: true, Stdio: target.StdioPipes})
	if err != nil {
		t.Fatal(err)
	}
	testprog.KillAtCleanup(t, p.PID())
	i := 0
	r.wait(t, &i, "entry", isStop(p))
	if hook != nil {
		if err := b.AddRestoreHook(p, hook); err != nil {
			t.Fatal(err)
		}
	}
	var hits atomic.Int64
	addrs := map[string]uint64{}
	for _, s := range syms {
		addrs[s] = symbol(t, p, path, s)
		_, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: symbol(t, p, path, s), Internal: true,
			OnHit: func(*target.Context, *target.Breakpoint) *target.SuspendReason { hits.Add(1); return nil }})
		if err != nil {
			t.Fatal(err)
		}
	}
	out := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(pio.Stdout); out <- b }()
	if err := mainThread(t, p).Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	if during != nil {
		during(p)
	}
	// Signals stop the thread (the fault test): pass them on.
	for {
		e := r.waitFor(t, &i, "exit or stop", 3*time.Minute, func(e target.Event) bool {
			return (e.Kind == target.EventExited && e.Context == p) || (e.Kind == target.EventStopped && e.Context.Parent() == p)
		})
		if e.Kind == target.EventExited {
			var run dstepRun
			run.exit = *e.Exit
			select {
			case o := <-out:
				run.stdout = string(o)
			case <-time.After(20 * time.Second):
				t.Fatal("no output")
			}
			run.hits = hits.Load()
			tg.Backend().(*Backend).do("stats", func() error { run.stats = b.dstats; return nil })
			run.events = r.all()
			run.syms = addrs
			return run
		}
		opts := target.ResumeOptions{}
		if e.Reason != nil && e.Reason.Signal == target.Signal(unix.SIGTRAP) {
			// Not the program's: do not kill it (the stop-the-world path
			// used to report stray ones; TestStopTheWorldThreads fails on
			// any).
			opts.Signal = -1
		}
		if err := e.Context.Resume(target.ResumeContinue, opts); err != nil {
			if c := target.CodeOf(err); c != target.CodeAlreadyRunning && c != target.CodeAlreadyExited {
				t.Fatalf("%s: %v", describe(e), err)
			}
			t.Logf("%s: %v", describe(e), err)
		}
	}
}

func buildFlags(t testing.TB, src string, flags ...string) string {
	t.Helper()
	return testprog.Build(t, testprog.Spec{Sources: []string{src}, Flags: flags})
}

// checksum is the first word of tp_dstep's output.
func checksum(out string) string {
	if f := strings.Fields(out); len(f) > 0 {
		return f[0]
	}
	return ""
}

// uninstrumented runs the program directly and returns its output.
func uninstrumented(t *testing.T, path string, args ...string) string {
	t.Helper()
	out, err := exec.Command(path, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v", path, args, err)
	}
	return string(out)
}

var dstepCases = []string{"ds_riprel", "ds_call", "ds_jcc_br", "ds_push_mem", "ds_pop_mem", "ds_icall_insn", "ds_ret_insn", "ds_rep_insn"}

// TestDisplacedStepCases: every relocation case (rip-relative load, call
// rel32, jcc rel8, rsp-relative push and pop, call through a rip-relative
// pointer, ret, rep movsb) passed without lifting the int3 gives the
// uninstrumented result, PIE and not, with the scratch area near the
// executable (displacements re-biased) and far from it (a scratch register).
func TestDisplacedStepCases(t *testing.T) {
	for _, pie := range []bool{true, false} {
		flags := []string{"-O2", "-pthread"}
		name := "pie"
		if !pie {
			flags, name = append(flags, "-no-pie"), "nopie"
		}
		path := buildFlags(t, "tp_dstep.c", flags...)
		want := uninstrumented(t, path, "loop", "2000")
		for _, far := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "/near", true: "/far"}[far], func(t *testing.T) {
				run := runDstep(t, path, []string{"loop", "2000"}, dstepCases, func(b *Backend) { b.scratchFar = far }, nil)
				if run.exit.Code != 0 || run.stdout != want {
					t.Fatalf("output %q exit %v, want %q", run.stdout, run.exit, want)
				}
				// Every case but ds_rep_insn runs 2000 times; rep once every 64.
				if wantHits := int64(7*2000 + 2000/64 + 1); run.hits != wantHits {
					t.Errorf("%d hits, want %d", run.hits, wantHits)
				}
				if run.stats.fallbacks != 0 || run.stats.held != 0 {
					t.Errorf("stop-the-world used: %+v", run.stats)
				}
				if run.stats.emulatedBranches == 0 || run.stats.stepped == 0 {
					t.Errorf("stats %+v", run.stats)
				}
				// ds_riprel and ds_icall_insn are rip-relative: re-biased near
				// the executable, through a scratch register far from it.
				if (run.stats.scratchRegs > 0) != far {
					t.Errorf("far=%v: %d steps used a scratch register", far, run.stats.scratchRegs)
				}
				t.Logf("%+v", run.stats)
			})
		}
	}
}

// TestDisplacedStep100k: 100,000 displaced steps of a rip-relative load give
// the uninstrumented result, and none of them stops the world.
func TestDisplacedStep100k(t *testing.T) {
	path := build(t, "tp_dstep.c")
	want := uninstrumented(t, path, "loop", "100000")
	run := runDstep(t, path, []string{"loop", "100000"}, []string{"ds_riprel"}, nil, nil)
	if run.exit.Code != 0 || run.stdout != want {
		t.Fatalf("output %q exit %v, want %q", run.stdout, run.exit, want)
	}
	if run.hits != 100000 || run.stats.stepped != 100000 || run.stats.held != 0 {
		t.Fatalf("hits %d, stats %+v", run.hits, run.stats)
	}
}

// TestDisplacedStepNonStop: 8 threads hit one breakpoint (on an instruction
// the emulator does not know) while a 9th never does: the 9th is never
// stopped, checked both by the backend (no thread held) and by sampling its
// /proc state while the others hammer. The negative control (displaced
// stepping off: the stop-the-world fallback) shows the sampling sees the 9th
// stopped (76,564 of 76,638 samples, 20 hits per thread in 187 s on the shared
// VM): too slow for every run, so it runs with SONDE_DSTEP_CONTROL=1.
func TestDisplacedStepNonStop(t *testing.T) {
	path := build(t, "tp_dstep.c")
	want := uninstrumented(t, path, "threads", "3000")
	for _, off := range []bool{false, true} {
		t.Run(map[bool]string{false: "displaced", true: "stop-the-world"}[off], func(t *testing.T) {
			if off && os.Getenv("SONDE_DSTEP_CONTROL") == "" {
				t.Skip("negative control (minutes): set SONDE_DSTEP_CONTROL=1 to run it")
			}
			var traced, samples atomic.Int64
			// Sampling starts once all ten threads exist and ends when the
			// first hammer is gone: the 9th's own exit stops it (the exit
			// event), after the hammers have ended.
			sample := func(p *target.Context) {
				taskDir := filepath.Join("/proc", pidString(p.PID()), "task")
				go func() {
					var tid string
					for k := 0; k < 5000; k++ {
						ents, _ := os.ReadDir(taskDir)
						tid = ""
						for _, e := range ents {
							if c, _ := os.ReadFile(filepath.Join(taskDir, e.Name(), "comm")); strings.TrimSpace(string(c)) == "nine" {
								tid = e.Name()
							}
						}
						if tid != "" && len(ents) == 10 {
							break
						}
						time.Sleep(time.Millisecond)
					}
					for tid != "" {
						st, err := os.ReadFile(filepath.Join(taskDir, tid, "stat"))
						ents, _ := os.ReadDir(taskDir)
						if err != nil || len(ents) < 10 {
							return
						}
						if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 't' {
							traced.Add(1)
						}
						samples.Add(1)
						time.Sleep(200 * time.Microsecond)
					}
				}()
			}
			n := "3000"
			if off {
				n = "20" // stopping the world per hit is slow: enough to show it
			}
			run := runDstep(t, path, []string{"threads", n}, []string{"ds_riprel"}, func(b *Backend) { b.noDisplaced = off }, sample)
			if off {
				// The negative control: stepping in place holds the others.
				// (Its output is not compared: that path is the fallback.)
				if run.stats.held == 0 {
					t.Errorf("negative control: stepping in place held no thread")
				}
				t.Logf("stop-the-world: %d threads held, the 9th seen in tracing stop %d of %d times", run.stats.held, traced.Load(), samples.Load())
				return
			}
			// The checksum: whether the 9th ran before the hammers were
			// done is the scheduler's (an uninstrumented run on a loaded
			// machine says nine-idle now and then); that it was never held
			// is the sampling's to say.
			if run.exit.Code != 0 || checksum(run.stdout) != checksum(want) {
				t.Fatalf("output %q exit %v, want %q", run.stdout, run.exit, want)
			}
			if run.hits != 8*3000 {
				t.Errorf("%d hits, want %d", run.hits, 8*3000)
			}
			if run.stats.held != 0 || traced.Load() != 0 {
				t.Errorf("other threads held %d times; the 9th seen in tracing stop %d times", run.stats.held, traced.Load())
			}
			if samples.Load() == 0 {
				t.Errorf("the 9th thread's state was never sampled")
			}
			t.Logf("the 9th thread sampled %d times, never stopped", samples.Load())
		})
	}
}

// TestDisplacedStepFault: a load that faults in its displaced copy reaches
// the program's own SIGSEGV handler with the application pc (the handler
// exits 3 otherwise), and sonde reports the fault at faulty_load; with the
// translation back turned off, the handler sees the slot's pc.
func TestDisplacedStepFault(t *testing.T) {
	path := build(t, "tp_dstep.c")
	for _, noTranslate := range []bool{false, true} {
		// A library user's restore hook sees the raw slot pc and the
		// translated application pc, with restoreMemory (the thread resumes
		// from the translated state).
		var hookRaw, hookApp atomic.Uint64
		hook := func(ctx *translate.RestoreContext, raw, tr *translate.Regs, restoreMemory bool) error {
			if restoreMemory && ctx.Entry.Owner == "displaced step" {
				hookRaw.Store(raw.RIP)
				hookApp.Store(tr.RIP)
			}
			return nil
		}
		run := runDstepHook(t, path, []string{"fault"}, []string{"faulty_load"}, func(b *Backend) { b.noTranslateBack = noTranslate }, nil, hook)
		var fault *target.Event
		for i, e := range run.events {
			if e.Kind == target.EventStopped && e.Reason != nil && e.Reason.Signal == target.Signal(unix.SIGSEGV) {
				fault = &run.events[i]
			}
		}
		if fault == nil {
			t.Fatalf("no SIGSEGV stop; exit %v", run.exit)
		}
		if noTranslate {
			if run.exit.Code != 3 {
				t.Errorf("negative control: exit %v, want 3 (the handler saw the slot's pc)", run.exit)
			}
			continue
		}
		if run.exit.Code != 0 || strings.TrimSpace(run.stdout) != "77" {
			t.Fatalf("exit %v output %q: the handler did not see faulty_load", run.exit, run.stdout)
		}
		if run.stats.stepped != 1 {
			t.Errorf("stats %+v", run.stats)
		}
		t.Logf("fault reported at %#x, stats %+v", fault.PC, run.stats)
		if fault.PC != run.syms["faulty_load"] {
			t.Errorf("SIGSEGV reported at %#x, want faulty_load %#x", fault.PC, run.syms["faulty_load"])
		}
		if a := run.stats.areaBase; hookApp.Load() != fault.PC || hookRaw.Load() < a || hookRaw.Load() >= a+scratchSize {
			t.Errorf("restore hook saw raw pc %#x, translated %#x", hookRaw.Load(), hookApp.Load())
		}
	}
}

// TestDisplacedStepAsyncSignals: signals sent at random moments while every
// case is being stepped displaced (scratch registers in use) are reported at
// application pcs, never in the scratch area, and the program's result is the
// uninstrumented one (a register clobbered by a step would change it).
func TestDisplacedStepAsyncSignals(t *testing.T) {
	path := build(t, "tp_dstep.c")
	want := uninstrumented(t, path, "loop", "5000")
	var sent atomic.Int64
	send := func(p *target.Context) {
		pid := p.PID()
		proc := testprog.OpenProc(t, pid)
		go func() {
			// Not before the program's handler is in place (SigCgt has SIGUSR1).
			for k := 0; k < 20000; k++ {
				st, err := os.ReadFile(filepath.Join("/proc", pidString(pid), "status"))
				if err != nil {
					return
				}
				if i := bytes.Index(st, []byte("SigCgt:\t")); i >= 0 {
					var mask uint64
					fmt.Sscanf(string(st[i+8:]), "%x", &mask)
					if mask&(1<<(unix.SIGUSR1-1)) != 0 {
						break
					}
				}
				time.Sleep(100 * time.Microsecond)
			}
			for k := 0; k < 300; k++ {
				if proc.Signal(unix.SIGUSR1) != nil {
					return
				}
				sent.Add(1)
				time.Sleep(time.Duration(500+k%7*300) * time.Microsecond)
			}
		}()
	}
	run := runDstep(t, path, []string{"loop", "5000"}, dstepCases, func(b *Backend) { b.scratchFar = true }, send)
	if run.exit.Code != 0 || run.stdout != want {
		t.Fatalf("output %q exit %v, want %q", run.stdout, run.exit, want)
	}
	stops := 0
	for _, e := range run.events {
		if e.Kind != target.EventStopped || e.Reason == nil || e.Reason.Signal != target.Signal(unix.SIGUSR1) {
			continue
		}
		stops++
		if a := run.stats.areaBase; e.PC >= a && e.PC < a+scratchSize {
			t.Errorf("stop reported in the scratch area: %s", describe(e))
		}
	}
	if stops == 0 {
		t.Fatalf("no SIGUSR1 stop (%d sent)", sent.Load())
	}
	t.Logf("%d signals sent, %d stops, %d of them caught inside a slot and translated; stats %+v", sent.Load(), stops, run.stats.translatedStops, run.stats)
}

// TestDisplacedStepDetach: detaching while breakpoints are being passed
// displaced leaves no scratch area mapped, the text of every case equal to the
// file's bytes, and the program running.
func TestDisplacedStepDetach(t *testing.T) {
	path := build(t, "tp_dstep.c")
	tg, r := newTarget(t)
	b := tg.Backend().(*Backend)
	p := launch(t, tg, path, "spin")
	i := 0
	r.wait(t, &i, "entry", isStop(p))
	var hits atomic.Int64
	for _, s := range dstepCases {
		if _, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: symbol(t, p, path, s), Internal: true,
			OnHit: func(*target.Context, *target.Breakpoint) *target.SuspendReason { hits.Add(1); return nil }}); err != nil {
			t.Fatal(err)
		}
	}
	if err := mainThread(t, p).Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 2000 && hits.Load() < 3000; k++ {
		time.Sleep(time.Millisecond)
	}
	var base uint64
	b.do("stats", func() error { base = b.dstats.areaBase; return nil })
	if base == 0 || hits.Load() == 0 {
		t.Fatalf("no scratch area after %d hits", hits.Load())
	}
	pid := p.PID()
	addrs := map[string]uint64{}
	for _, s := range dstepCases {
		addrs[s] = symbol(t, p, path, s)
	}
	if err := p.Detach(); err != nil {
		t.Fatal(err)
	}
	maps, err := readMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps {
		if base >= m.Addr && base < m.Addr+m.Size {
			t.Errorf("scratch area still mapped after detach: %s", m)
		}
	}
	mem, err := os.Open(filepath.Join("/proc", pidString(pid), "mem"))
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	for s, a := range addrs {
		got := make([]byte, 16)
		mem.ReadAt(got, int64(a))
		if want := fileBytes(t, path, s, 16); !bytes.Equal(got, want) {
			t.Errorf("%s after detach: % x, want the file's % x", s, got, want)
		}
	}
	time.Sleep(20 * time.Millisecond)
	if st := procState(t, pid); st.State != 'R' && st.State != 'S' {
		t.Errorf("state %c after detach", st.State)
	}
	t.Logf("%d hits before detach; area at %#x removed", hits.Load(), base)
}
