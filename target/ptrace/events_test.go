package ptrace

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/arch/x86/x86asm"
	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
)

func TestSignalsHandledIgnoredFatal(t *testing.T) {
	path := build(t, "tp_signals.c")
	t.Run("reported and delivered", func(t *testing.T) {
		tg, r := newTarget(t)
		p := launch(t, tg, path)
		th := mainThread(t, p)
		i := 0
		r.wait(t, &i, "entry", isStop(p))
		th.Resume(target.ResumeContinue, target.ResumeOptions{})
		for _, sig := range []target.Signal{target.Signal(unix.SIGUSR1), target.Signal(unix.SIGUSR2)} {
			e := r.wait(t, &i, "signal stop", isStop(p))
			if e.Reason.Kind != target.ReasonSignal || e.Reason.Signal != sig {
				t.Fatalf("stop %s, want signal %d", describe(e), sig)
			}
			th.Resume(target.ResumeContinue, target.ResumeOptions{})
		}
		if e := r.wait(t, &i, "exit", isExit(p)); e.Exit.Code != 1 {
			t.Fatalf("exit %v: the handler should have run once", e.Exit)
		}
	})
	t.Run("don't stop, don't pass", func(t *testing.T) {
		tg, r := newTarget(t)
		p := launch(t, tg, path)
		i := 0
		r.wait(t, &i, "entry", isStop(p))
		usr1, usr2 := target.Signal(unix.SIGUSR1), target.Signal(unix.SIGUSR2)
		p.SetSignalMasks(target.DefaultDontStop.With(usr1).With(usr2), target.SignalSet(0).With(usr1))
		p.Resume(target.ResumeContinue, target.ResumeOptions{})
		e := r.wait(t, &i, "exit or stop", func(e target.Event) bool { return isStop(p)(e) || isExit(p)(e) })
		if e.Kind != target.EventExited || e.Exit.Code != 0 {
			t.Fatalf("%s: SIGUSR1 should have been swallowed without a stop", describe(e))
		}
	})
	t.Run("fatal", func(t *testing.T) {
		tg, r := newTarget(t)
		p := launch(t, tg, path, "fatal")
		th := mainThread(t, p)
		i := 0
		r.wait(t, &i, "entry", isStop(p))
		p.SetSignalMasks(target.DefaultDontStop.With(target.Signal(unix.SIGUSR1)).With(target.Signal(unix.SIGUSR2)), 0)
		th.Resume(target.ResumeContinue, target.ResumeOptions{})
		e := r.wait(t, &i, "SIGSEGV", isStop(p))
		if e.Reason.Kind != target.ReasonException || e.Reason.Signal != target.Signal(unix.SIGSEGV) || e.Reason.Message == "" {
			t.Fatalf("stop %s", describe(e))
		}
		t.Logf("exception: %s", e.Reason.Message)
		th.Resume(target.ResumeContinue, target.ResumeOptions{})
		if e := r.wait(t, &i, "exit", isExit(p)); e.Exit.Signal != target.Signal(unix.SIGSEGV) {
			t.Fatalf("exit %v", e.Exit)
		}
	})
}

func TestForkVforkExecClone(t *testing.T) {
	path := build(t, "tp_fork.c")
	cases := []struct {
		mode   string
		follow bool
		code   int
	}{
		{"fork", false, 17}, {"fork", true, 17}, {"vfork", false, 25}, {"vfork", true, 25},
		// The vfork child runs the parent's breakpoint before its exec: it must
		// step over it unseen (a SIGTRAP would kill it: exit 20).
		{"vforkwork", false, 25}, {"vforkwork", true, 25},
		{"exec", false, 5}, {"clone", false, 3},
	}
	for _, c := range cases {
		name := c.mode
		if c.follow {
			name += "-follow"
		}
		t.Run(name, func(t *testing.T) {
			tg, r := newTarget(t)
			p, _, err := tg.Launch(target.LaunchOptions{Path: path, Argv: []string{path, c.mode}, StopAtEntry: true, FollowForks: c.follow, Stdio: target.StdioNull})
			if err != nil {
				t.Fatal(err)
			}
			i := 0
			r.wait(t, &i, "entry", isStop(p))
			work := symbol(t, p, path, "child_work")
			bp, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: work})
			if err != nil {
				t.Fatal(err)
			}
			p.Resume(target.ResumeContinue, target.ResumeOptions{})
			var child *target.Context
			for {
				e := r.wait(t, &i, "event", func(e target.Event) bool {
					return e.Kind == target.EventStopped || e.Kind == target.EventExited || e.Kind == target.EventCreated || e.Kind == target.EventMemoryMapChanged
				})
				switch {
				case e.Kind == target.EventCreated && e.Context.IsProcess():
					child = e.Context
					if e.Context.Creator() != p {
						t.Fatalf("child %s creator %v", e.Context.ID(), e.Context.Creator())
					}
				case e.Kind == target.EventCreated && c.mode == "clone":
					if e.Context.Creator() == nil || e.Context.Creator().TID() != p.PID() {
						t.Fatalf("thread %s creator %v", e.Context.ID(), e.Context.Creator())
					}
				case e.Kind == target.EventStopped:
					// Only the clone case stops: the new thread hits child_work.
					if c.mode != "clone" || e.Reason.Kind != target.ReasonBreakpoint || e.Context.TID() == p.PID() {
						t.Fatalf("unexpected stop %s", describe(e))
					}
					e.Context.Resume(target.ResumeContinue, target.ResumeOptions{})
				case e.Kind == target.EventMemoryMapChanged && e.Context == child:
					// The followed vfork child's exec.
				case e.Kind == target.EventMemoryMapChanged:
					if c.mode != "exec" || e.Context != p || len(tg.Breakpoints(p)) != 0 {
						t.Fatalf("%s (breakpoints left: %d)", describe(e), len(tg.Breakpoints(p)))
					}
				case e.Kind == target.EventExited && e.Context == p:
					if e.Exit.Code != c.code {
						t.Fatalf("exit %v, want %d", e.Exit, c.code)
					}
					if c.follow && child == nil {
						t.Fatal("followed child never appeared")
					}
					if c.mode == "clone" && bp.Hits() != 1 {
						t.Fatalf("clone: %d hits", bp.Hits())
					}
					return
				}
			}
		})
	}
}

func TestHardwareBreakpointsAndWatchpoints(t *testing.T) {
	testprog.RequireHardwareDebug(t)
	tg, r := newTarget(t)
	path := build(t, "tp_hotloop.c")
	p := launch(t, tg, path, "late")
	i := 0
	r.wait(t, &i, "entry", isStop(p))
	watched := symbol(t, p, path, "watched")
	tick := symbol(t, p, path, "tick")
	// Planted before the worker thread exists: it must get them too.
	wp, err := tg.SetBreakpoint(p, target.BreakpointSpec{Kind: target.Watchpoint, Addr: watched, Size: 8, Access: target.AccessWrite})
	if err != nil {
		t.Fatal(err)
	}
	hb, err := tg.SetBreakpoint(p, target.BreakpointSpec{Kind: target.BreakpointHardware, Addr: tick})
	if err != nil {
		t.Fatal(err)
	}
	rw, err := tg.SetBreakpoint(p, target.BreakpointSpec{Kind: target.Watchpoint, Addr: symbol(t, p, path, "reader_only"), Size: 8, Access: target.AccessReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	extra, err := tg.SetBreakpoint(p, target.BreakpointSpec{Kind: target.Watchpoint, Addr: symbol(t, p, path, "sink"), Size: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tg.SetBreakpoint(p, target.BreakpointSpec{Kind: target.Watchpoint, Addr: watched, Size: 1})
	if target.CodeOf(err) != target.CodeUnsupported || !errors.Is(err, ErrNoHardwareSlot) {
		t.Fatalf("fifth slot: %v", err)
	}
	if err := tg.RemoveBreakpoint(extra); err != nil {
		t.Fatal(err)
	}
	p.Resume(target.ResumeContinue, target.ResumeOptions{})
	want := []struct {
		kind target.ReasonKind
		bp   *target.Breakpoint
	}{
		{target.ReasonBreakpoint, hb}, // tick()
		{target.ReasonWatchpoint, wp}, // watched = watched + 1
		{target.ReasonWatchpoint, rw}, // sink = reader_only
		{target.ReasonWatchpoint, rw}, // other_entry() reads it too
		{target.ReasonBreakpoint, hb}, // the next tick()
	}
	for k, w := range want {
		e := r.wait(t, &i, "hardware stop", isStop(p))
		if e.Reason.Kind != w.kind || len(e.Reason.Breakpoints) != 1 || e.Reason.Breakpoints[0] != w.bp {
			t.Fatalf("stop %d: %s", k, describe(e))
		}
		if e.Context.TID() == p.PID() {
			t.Fatalf("stop %d in the main thread; the worker was created later", k)
		}
		if w.kind == target.ReasonBreakpoint && e.PC != tick {
			t.Fatalf("instruction breakpoint at 0x%x, want 0x%x", e.PC, tick)
		}
		if w.kind == target.ReasonWatchpoint && e.Reason.DataAddress != w.bp.Spec.Addr {
			t.Fatalf("watchpoint data address 0x%x", e.Reason.DataAddress)
		}
		if k == len(want)-1 {
			for _, bp := range []*target.Breakpoint{wp, hb, rw} {
				if err := tg.RemoveBreakpoint(bp); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := e.Context.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if e := r.wait(t, &i, "exit", isExit(p)); e.Exit.Code != 0 {
		t.Fatalf("exit %v", e.Exit)
	}
}

func TestStepping(t *testing.T) {
	tg, r := newTarget(t)
	path := build(t, "tp_fork.c")
	p := launch(t, tg, path, "exit5")
	th := mainThread(t, p)
	i := 0
	r.wait(t, &i, "entry", isStop(p))
	work := symbol(t, p, path, "child_work")
	var callSite uint64
	var bps []*target.Breakpoint
	for _, site := range findCalls(t, p, symbol(t, p, path, "main"), work) {
		bp, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: site})
		if err != nil {
			t.Fatal(err)
		}
		bps = append(bps, bp)
	}
	th.Resume(target.ResumeContinue, target.ResumeOptions{})
	e := r.wait(t, &i, "call of child_work", isStop(p))
	callSite = e.PC
	for _, bp := range bps {
		tg.RemoveBreakpoint(bp)
	}
	if err := th.Resume(target.ResumeStepInto, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	e = r.wait(t, &i, "step", isStop(p))
	if e.Reason.Kind != target.ReasonStep || e.PC != work {
		t.Fatalf("step into the call: %s, want pc 0x%x", describe(e), work)
	}
	// Step out by hand: range-step over child_work's body until the PC leaves it.
	th.Resume(target.ResumeStepIntoRange, target.ResumeOptions{RangeStart: work, RangeEnd: work + 64})
	e = r.wait(t, &i, "range step", isStop(p))
	if e.Reason.Kind != target.ReasonStep || e.PC <= callSite || e.PC > callSite+16 {
		t.Fatalf("range step ended at 0x%x, want just after the call at 0x%x", e.PC, callSite)
	}
	// Now the same call, stepped over: restart the program at the call site.
	regs, _ := th.Registers()
	sp := regs.SP()
	regs.SetUint64(tg.Arch().ByName("rip"), callSite)
	regs.SetUint64(tg.Arch().ByName("rsp"), sp)
	if err := th.SetRegisters(regs); err != nil {
		t.Fatal(err)
	}
	th.Resume(target.ResumeStepOver, target.ResumeOptions{})
	e = r.wait(t, &i, "step over", isStop(p))
	if e.Reason.Kind != target.ReasonStep || e.PC <= callSite || e.PC > callSite+16 {
		t.Fatalf("step over the call ended at %s", describe(e))
	}
	if err := th.Resume(target.ResumeStepOverRange, target.ResumeOptions{RangeStart: 10, RangeEnd: 5}); target.CodeOf(err) != target.CodeInvalidAddress {
		t.Fatalf("empty range: %v", err)
	}
	th.Resume(target.ResumeContinue, target.ResumeOptions{})
	if e := r.wait(t, &i, "exit", isExit(p)); e.Exit.Code != 5 {
		t.Fatalf("exit %v", e.Exit)
	}
}

func TestSuspendResume64Threads(t *testing.T) {
	path := build(t, "tp_threads.c")
	cmd := startUntraced(t, path, "60")
	tg, r := newTarget(t)
	p, err := tg.Attach(cmd.Process.Pid, target.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Children()); n != 65 {
		t.Fatalf("%d threads, want 65", n)
	}
	for round := 0; round < 3; round++ {
		if err := p.Suspend(); err != nil {
			t.Fatal(err)
		}
		for _, th := range p.Children() {
			if s, reason, _ := th.State(); s != target.StateStopped || reason.Kind != target.ReasonUser {
				t.Fatalf("round %d: %s %v", round, th.ID(), s)
			}
		}
		if st := procState(t, cmd.Process.Pid); st.State != 't' {
			t.Fatalf("process state %c while suspended", st.State)
		}
		if err := p.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, th := range p.Children() {
			if s, _, _ := th.State(); s != target.StateRunning {
				t.Fatalf("round %d: %s %v after resume", round, th.ID(), s)
			}
		}
	}
	_ = r
}

// TestCloseLeavesProcessRunningAndUnpatched plants every kind of patch, closes
// the target and checks that the process runs on untraced with its text as in
// the file.
func TestCloseLeavesProcessRunningAndUnpatched(t *testing.T) {
	path := build(t, "tp_hotloop.c")
	tg, err := New()
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := tg.Launch(target.LaunchOptions{Path: path, Argv: []string{path}, StopAtEntry: true, Stdio: target.StdioNull})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.PID()
	defer testprog.OpenProc(t, pid).Kill()
	tick, other := symbol(t, p, path, "tick"), symbol(t, p, path, "other_entry")
	for _, spec := range []target.BreakpointSpec{{Addr: tick}, {Addr: other}, {Addr: tick + 1},
		{Kind: target.Watchpoint, Addr: symbol(t, p, path, "watched"), Size: 8}} {
		if _, err := tg.SetBreakpoint(p, spec); err != nil {
			t.Fatal(err)
		}
	}
	w := symbol(t, p, path, "watched")
	r := newRecorder(tg)
	p.Resume(target.ResumeContinue, target.ResumeOptions{})
	i := 0
	r.wait(t, &i, "a stop", isStop(p)) // some thread at a breakpoint, PC moved back
	if err := tg.Close(); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, pid, "RS")
	if st.TracerPid != 0 {
		t.Fatalf("tracer %d after Close", st.TracerPid)
	}
	mem, err := os.Open("/proc/" + pidString(pid) + "/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	for _, s := range []struct {
		name string
		addr uint64
	}{{"tick", tick}, {"other_entry", other}} {
		want := fileBytes(t, path, s.name, 16)
		got := make([]byte, 16)
		if _, err := mem.ReadAt(got, int64(s.addr)); err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("%s after Close: % x, file: % x", s.name, got, want)
		}
	}
	// Still running: the counter keeps moving.
	a, b := make([]byte, 8), make([]byte, 8)
	mem.ReadAt(a, int64(w))
	waitState(t, pid, "RS")
	for k := 0; k < 100 && string(a) == string(b); k++ {
		time.Sleep(time.Millisecond)
		mem.ReadAt(b, int64(w))
	}
	if string(a) == string(b) {
		st, _ := os.ReadFile("/proc/" + pidString(pid) + "/stat")
		t.Fatalf("process does not run after Close: %x %x %s", a, b, st)
	}
}

// findCalls returns the addresses of every "call callee" in the function at fn.
func findCalls(t *testing.T, proc *target.Context, fn, callee uint64) []uint64 {
	t.Helper()
	code := readN(t, proc, fn, 1024)
	var out []uint64
	for off := 0; off < len(code); {
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil {
			off++
			continue
		}
		if inst.Op == x86asm.CALL {
			if rel, ok := inst.Args[0].(x86asm.Rel); ok && fn+uint64(off+inst.Len)+uint64(int64(rel)) == callee {
				out = append(out, fn+uint64(off))
			}
		}
		off += inst.Len
	}
	if len(out) == 0 {
		t.Fatalf("no call to 0x%x in the function at 0x%x", callee, fn)
	}
	return out
}
