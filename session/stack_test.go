package session

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/procmaps"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/core"
	"github.com/sondedbg/sonde/target/ptrace"
	"github.com/sondedbg/sonde/unwind"
)

// deepTarget starts testdata/stk_threads.c with a 300-deep recursion (no
// frame pointers) and returns its pid once it blocks.
func deepTarget(tb testing.TB) (path string, pid int) {
	tb.Helper()
	return startDeep(tb, []string{"-O2", "-fomit-frame-pointer"}, "stk-deep-O2-nofp")
}

// startDeep is deepTarget built with flags.
func startDeep(tb testing.TB, flags []string, name string) (path string, pid int) {
	tb.Helper()
	path = testprog.Build(tb, testprog.Spec{Sources: []string{"stk_threads.c"}, Flags: flags, Name: name})
	cmd := exec.Command(path, "deep", "300")
	// No environment: the stack's top then lies within a few KB of main's
	// frame whatever the environment of the tests (TestBacktraceReuseSeesWrites).
	cmd.Env = []string{}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if l, err := bufio.NewReader(out).ReadString('\n'); err != nil || l != "ready\n" {
		tb.Fatalf("target not ready: %q %v", l, err)
	}
	testprog.WaitBlocked(tb, cmd.Process.Pid)
	return path, cmd.Process.Pid
}

// TestBacktraceLiveAndCoreAgree unwinds the same 300-deep stack live and
// from a gcore'd core through the session: same pcs, functions and lines.
func TestBacktraceLiveAndCoreAgree(t *testing.T) {
	if _, err := exec.LookPath("gcore"); err != nil {
		t.Skip("gcore (gdb) not installed")
	}
	path, pid := deepTarget(t)
	corePath := filepath.Join(t.TempDir(), "core")
	if out, err := exec.Command("gcore", "-o", corePath, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		t.Fatalf("gcore: %v\n%s", err, out)
	}
	corePath += "." + strconv.Itoa(pid)

	live := liveSession(t, pid)
	lt, err := live.Backtrace(mainThread(t, live), StackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs := coreSession(t, corePath, path)
	ct, err := cs.Backtrace(mainThread(t, cs), StackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(lt.Frames) < 300 || lt.Stop != unwind.StopOutermost {
		t.Fatalf("live: %d frames, stop %v %v", len(lt.Frames), lt.Stop, lt.Err)
	}
	if len(lt.Frames) != len(ct.Frames) || lt.Stop != ct.Stop {
		t.Fatalf("live %d frames (%v), core %d (%v)", len(lt.Frames), lt.Stop, len(ct.Frames), ct.Stop)
	}
	for i := range lt.Frames {
		l, c := lt.Frames[i], ct.Frames[i]
		if l.PC != c.PC || l.Kind != c.Kind || l.Symbol != c.Symbol {
			t.Errorf("#%d: live %#x %v %+v, core %#x %v %+v", i, l.PC, l.Kind, l.Symbol, c.PC, c.Kind, c.Symbol)
		}
	}
	deep := 0
	for _, f := range lt.Frames {
		if f.Symbol.Function == "deep" {
			deep++
		}
	}
	if deep != 301 {
		t.Errorf("%d frames in deep(), want 301", deep)
	}
}

func liveSession(tb testing.TB, pid int) *Session {
	tb.Helper()
	tg, err := ptrace.New()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { tg.Close() })
	if _, err := tg.Attach(pid, target.AttachOptions{Stop: true}); err != nil {
		tb.Fatal(err)
	}
	return New(tg, Options{})
}

func coreSession(tb testing.TB, corePath, exe string) *Session {
	tb.Helper()
	tg, err := core.Open(corePath, core.Options{Executable: exe})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { tg.Close() })
	return New(tg, Options{})
}

func mainThread(tb testing.TB, s *Session) *target.Context {
	tb.Helper()
	procs := s.Target().Processes()
	if len(procs) == 0 || len(procs[0].Children()) == 0 {
		tb.Fatal("no process or thread")
	}
	return procs[0].Children()[0]
}

// benchmarkStack measures warm unwinding (pcs only) of the 300-deep stack
// through the session's target callbacks, in frames per second.
func benchmarkStack(b *testing.B, s *Session) {
	th := mainThread(b, s)
	frames, _, err := s.Walk(th, nil)
	if err != nil || len(frames) < 300 {
		b.Fatalf("%d frames, %v", len(frames), err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		frames, _, _ = s.Walk(th, frames[:0])
		n += len(frames)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(n)/(threadCPU()-cpu0).Seconds(), "frames/cpu-s")
}

func BenchmarkStackLive(b *testing.B) {
	_, pid := deepTarget(b)
	benchmarkStack(b, liveSession(b, pid))
}

func BenchmarkStackCore(b *testing.B) {
	if _, err := exec.LookPath("gcore"); err != nil {
		b.Skip("gcore (gdb) not installed")
	}
	path, pid := deepTarget(b)
	corePath := filepath.Join(b.TempDir(), "core")
	if out, err := exec.Command("gcore", "-o", corePath, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		b.Fatalf("gcore: %v\n%s", err, out)
	}
	benchmarkStack(b, coreSession(b, corePath+"."+strconv.Itoa(pid), path))
}

// threadCPU is the calling OS thread's CPU time: on the shared machines
// wall-clock rates swing with the load, CPU time much less.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBacktraceLive is the walk a debugger asks for at each stop: the
// 300-deep stack with inline frames and symbols, through the live target
// (each walk reads the stack again, as after a stop), in frames per second.
func BenchmarkBacktraceLive(b *testing.B) {
	_, pid := deepTarget(b)
	s := liveSession(b, pid)
	th := mainThread(b, s)
	t, err := s.Backtrace(th, StackOptions{})
	if err != nil || len(t.Frames) < 300 {
		b.Fatalf("%d frames, %v", len(t.Frames), err)
	}
	// fresh: every frame unwound and symbolized, as at a stop with another
	// stack; again: the same stop again, where the unwinder reads the stack
	// again, finds it unchanged and replays its last walk.
	// no-tailcalls: again, without the search for tail-call frames
	// (tailcall.go), which runs on every walk.
	for _, mode := range []string{"fresh", "again", "again-no-tailcalls"} {
		b.Run(mode, func(b *testing.B) {
			tu := threadExt.Get(th)
			n := 0
			for b.Loop() {
				if mode == "fresh" {
					tu.mu.Lock()
					tu.u.Forget()
					tu.mu.Unlock()
				}
				t, _ = s.Backtrace(th, StackOptions{NoTailCalls: mode == "again-no-tailcalls"})
				n += len(t.Frames)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}

// stackTop is the end of the [stack] mapping of process pid.
func stackTop(t *testing.T, pid int) uint64 {
	t.Helper()
	maps, err := procmaps.ReadPID(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps {
		if m.Name == "[stack]" {
			return m.End
		}
	}
	t.Fatalf("process %d has no [stack] mapping", pid)
	return 0
}

// TestBacktraceReuseSeesWrites: the thread's unwinder replays its last walk
// only while the stack memory it read is unchanged. A return address
// overwritten in the live process (as a program or a debugger's write
// would) changes the next Backtrace exactly as a fresh walk sees it.
func TestBacktraceReuseSeesWrites(t *testing.T) {
	_, pid := deepTarget(t)
	s := liveSession(t, pid)
	th := mainThread(t, s)
	forget := func() {
		tu := threadExt.Get(th)
		tu.mu.Lock()
		tu.u.Forget()
		tu.mu.Unlock()
	}
	// check compares a Backtrace with a fresh walk's, which it then leaves
	// as the record the next one may replay.
	check := func(what string, wantReused bool) unwind.Trace {
		t.Helper()
		got, err := s.Backtrace(th, StackOptions{})
		if err != nil {
			t.Fatal(err)
		}
		reused := threadExt.Get(th).u.Reused()
		forget()
		want, err := s.Backtrace(th, StackOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Frames) != len(want.Frames) || got.Stop != want.Stop {
			t.Fatalf("%s: %d frames (%v), fresh walk %d (%v)", what, len(got.Frames), got.Stop, len(want.Frames), want.Stop)
		}
		for i := range got.Frames {
			if got.Frames[i] != want.Frames[i] {
				t.Fatalf("%s: frame %d\n got %+v\nwant %+v", what, i, got.Frames[i], want.Frames[i])
			}
		}
		if (reused > 0) != wantReused {
			t.Errorf("%s: %d frames reused", what, reused)
		}
		return got
	}
	good := check("first", false)
	check("again", true)
	// A replay reads the stack again, from just below frame 0's stack
	// pointer up, in as few target reads as the window allows (one per 16
	// KB; each is a system call), and the code page the engine looked at
	// for one of this program's frames.
	s.Backtrace(th, StackOptions{})
	span := good.Frames[len(good.Frames)-1].CFA - good.Frames[0].SP
	if got, most := threadExt.Get(th).cb.reads, int(span/readAhead)+2; got > most {
		t.Errorf("replay of a %d-byte stack: %d target reads, want at most %d", span, got, most)
	}
	// The first window ran into the top of the stack; later ones stop there
	// (a read that meets unmapped memory costs several times a whole one).
	// Whether a window runs into the top depends on the layout: the kernel
	// puts the program's environment and up to 8 KB of random padding
	// between the top and main's frame. startDeep gives the program an
	// empty environment, so the top is always within the window that
	// starts below frame 0 (the deep stack is ~6 KB).
	top := stackTop(t, pid)
	if start := good.Frames[0].SP &^ 511; top-start >= readAhead {
		t.Fatalf("stack top %#x is %d bytes above the first window (%#x): the test needs it within %d", top, top-start, start, readAhead)
	}
	if cb := &threadExt.Get(th).cb; cb.stackEnd != top || cb.short != 0 {
		t.Errorf("stack end %#x (the stack's mapping ends at %#x), %d short reads in the replay", cb.stackEnd, top, cb.short)
	}
	// A stack end learned wrong (as if the thread had moved to another
	// stack): reads past it go to the target, and the walk is unchanged.
	threadExt.Get(th).cb.stackEnd = good.Frames[0].SP + 1024
	forget()
	moved, err := s.Backtrace(th, StackOptions{})
	if err != nil || len(moved.Frames) != len(good.Frames) || moved.Frames[len(moved.Frames)-1] != good.Frames[len(good.Frames)-1] {
		t.Fatalf("with a stack end too low: %d frames (%v), want %d", len(moved.Frames), err, len(good.Frames))
	}
	if end := threadExt.Get(th).cb.stackEnd; end == good.Frames[0].SP+1024 {
		t.Errorf("stack end still %#x after reads past it succeeded", end)
	}
	// Frame 10's return address lives just below frame 9's CFA.
	slot := good.Frames[9].CFA - 8
	var orig [8]byte
	if _, err := th.ReadMemory(slot, orig[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := th.WriteMemory(slot, []byte{0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0, 0}); err != nil {
		t.Fatal(err)
	}
	damaged := check("return address overwritten", false)
	if len(damaged.Frames) >= len(good.Frames) {
		t.Errorf("return address overwritten: %d frames, intact %d", len(damaged.Frames), len(good.Frames))
	}
	check("overwritten, again", true)
	if _, err := th.WriteMemory(slot, orig[:]); err != nil {
		t.Fatal(err)
	}
	check("restored", false)
	check("restored, again", true)
}

// BenchmarkTailCallSearch is what the search for tail-call frames adds to
// each Backtrace: addTailCalls over the 300-deep live stack's trace (306
// frames, call sites decoded on the first walk), with no target reads.
func BenchmarkTailCallSearch(b *testing.B) {
	_, pid := deepTarget(b)
	s := liveSession(b, pid)
	th := mainThread(b, s)
	t, err := s.Backtrace(th, StackOptions{NoTailCalls: true})
	if err != nil || len(t.Frames) < 300 {
		b.Fatalf("%d frames, %v", len(t.Frames), err)
	}
	mods, err := s.Modules(th)
	if err != nil {
		b.Fatal(err)
	}
	st := procExt.Get(th.Process())
	work := t
	for b.Loop() {
		work.Frames = t.Frames
		s.addTailCalls(mods, st, &work)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(t.Frames)), "ns/frame")
}
