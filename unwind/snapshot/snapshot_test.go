package snapshot

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/memimage"
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target/core"
	"github.com/sondedbg/sonde/unwind"
)

// sample is what a profiler's sample holds: one thread's registers and a
// copy of its stack from the stack pointer up, plus the process's mappings.
type sample struct {
	maps  []Mapping
	regs  unwind.Registers
	stack []byte
	sp    uint64
	// extra is more stack (the thread's normal stack when sp is on a
	// signal stack).
	extra     []byte
	extraAddr uint64
	// want is the session's backtrace of the same thread from the core.
	want unwind.Trace
}

// takeSample runs testdata/stk_threads.c in mode args, dumps a core of it
// with gcore and cuts a perf-like sample of the thread tid index out of the
// core: registers, up to 64 KiB of stack, and /proc/PID/maps.
func takeSample(t testing.TB, flags []string, args ...string) sample {
	t.Helper()
	if _, err := exec.LookPath("gcore"); err != nil {
		t.Skip("gcore (gdb) not installed")
	}
	path := testprog.Build(t, testprog.Spec{Sources: []string{"stk_threads.c"}, Flags: flags, Name: "stk-" + strings.Join(flags, "")})
	cmd := exec.Command(path, args...)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if l, err := bufio.NewReader(out).ReadString('\n'); err != nil || l != "ready\n" {
		t.Fatalf("not ready: %q %v", l, err)
	}
	testprog.WaitBlocked(t, cmd.Process.Pid)
	pid := cmd.Process.Pid
	mf, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	maps, err := ReadMaps(mf)
	mf.Close()
	if err != nil {
		t.Fatal(err)
	}
	corePath := filepath.Join(t.TempDir(), "core")
	if out, err := exec.Command("gcore", "-o", corePath, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		t.Fatalf("gcore: %v\n%s", err, out)
	}
	tg, err := core.Open(corePath+"."+strconv.Itoa(pid), core.Options{Executable: path})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	th := tg.Processes()[0].Children()[0]
	s := sample{maps: maps}
	r, err := th.Registers()
	if err != nil {
		t.Fatal(err)
	}
	for reg := 0; reg < unwind.NumRegs; reg++ {
		if v, err := r.DWARF(reg); err == nil {
			s.regs.Set(reg, v)
		}
	}
	s.sp, _ = s.regs.Get(7)
	s.stack = make([]byte, 64<<10)
	n, _ := th.ReadMemory(s.sp, s.stack)
	s.stack = s.stack[:n]
	// A sample taken on a signal stack needs the interrupted stack too: a
	// profiler would copy it as well. Take the [stack] mapping's top 64 KiB.
	for _, m := range s.maps {
		if m.Name == "[stack]" && (s.sp < m.Start || s.sp >= m.End) {
			b := make([]byte, 64<<10)
			n, _ := th.ReadMemory(m.End-uint64(len(b)), b)
			s.extra, s.extraAddr = b[:n], m.End-uint64(len(b))
		}
	}
	// The vDSO exists only in memory: give the sample its bytes, as a
	// profiler would from its own copy.
	for i, m := range s.maps {
		if m.Name == "[vdso]" {
			b := make([]byte, m.End-m.Start)
			if n, _ := th.ReadMemory(m.Start, b); n == len(b) {
				s.maps[i].Data = b
			}
		}
	}
	sess := session.New(tg, session.Options{})
	// Tail-call frames are the session's (call-site DWARF), not the engine's.
	s.want, err = sess.Backtrace(th, session.StackOptions{NoTailCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSnapshotMatchesCore unwinds perf-like samples (registers + stack copy
// + mapped files) and compares every frame — pc, kind, function, file:line,
// inline frames — with the session's walk of the full core.
func TestSnapshotMatchesCore(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags []string
		args  []string
	}{
		{"deep-nofp", []string{"-O2", "-fomit-frame-pointer"}, []string{"deep", "100"}},
		{"signal-altstack", []string{"-O2"}, []string{"altstack"}},
		{"qsort", []string{"-O0"}, []string{"qsort"}},
		{"inline", []string{"-O2"}, []string{"inline", "3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := takeSample(t, c.flags, c.args...)
			p, err := New(s.maps, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			th := p.Thread(&s.regs, s.stack, s.sp)
			th.AddMemory(s.extra, s.extraAddr)
			got, err := th.Backtrace(unwind.BacktraceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			compareTraces(t, got, s.want)
		})
	}
}

func compareTraces(t *testing.T, got, want unwind.Trace) {
	t.Helper()
	if len(want.Frames) < 3 {
		t.Fatalf("reference has %d frames", len(want.Frames))
	}
	if len(got.Frames) != len(want.Frames) {
		t.Errorf("%d frames (stop %v %v), core %d (stop %v)", len(got.Frames), got.Stop, got.Err, len(want.Frames), want.Stop)
	}
	for i := 0; i < min(len(got.Frames), len(want.Frames)); i++ {
		g, w := got.Frames[i], want.Frames[i]
		if g.PC != w.PC || g.Kind != w.Kind || g.Symbol != w.Symbol {
			t.Errorf("#%d: %#x %v %q %s:%d, core %#x %v %q %s:%d", i, g.PC, g.Kind, g.Symbol.Function, g.Symbol.File, g.Symbol.Line,
				w.PC, w.Kind, w.Symbol.Function, w.Symbol.File, w.Symbol.Line)
		}
	}
}

// TestSnapshotShortStackCopy: a sample whose stack copy ends early stops
// with a stop reason where the copy ends, after the frames it could unwind.
func TestSnapshotShortStackCopy(t *testing.T) {
	s := takeSample(t, []string{"-O2", "-fomit-frame-pointer"}, "deep", "100")
	p, err := New(s.maps, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got, err := p.Thread(&s.regs, s.stack[:512], s.sp).Backtrace(unwind.BacktraceOptions{NoSymbols: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Frames) < 3 || len(got.Frames) >= len(s.want.Frames) || got.Stop == unwind.StopOutermost {
		t.Fatalf("%d frames, stop %v (%v); full stack has %d", len(got.Frames), got.Stop, got.Err, len(s.want.Frames))
	}
	for i, f := range got.Frames {
		if f.PC != s.want.Frames[i].PC {
			t.Fatalf("#%d: %#x, want %#x", i, f.PC, s.want.Frames[i].PC)
		}
	}
}

func TestReadMaps(t *testing.T) {
	text := "55d0c0a00000-55d0c0a01000 r--p 00000000 fe:01 1234   /usr/bin/x y\n" +
		"55d0c0a01000-55d0c0a02000 r-xp 00001000 fe:01 1234   /usr/bin/x y\n" +
		"7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n" +
		"7ffd1000-7ffd3000 r-xp 00000000 00:00 0                  [vdso]\n" +
		"7f1000000000-7f1000001000 r-xp 00000000 fe:01 99 /lib/libgone.so (deleted)\n"
	maps, err := ReadMaps(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{Start: 0x55d0c0a00000, End: 0x55d0c0a01000, Path: "/usr/bin/x y", Name: "/usr/bin/x y"},
		{Start: 0x55d0c0a01000, End: 0x55d0c0a02000, Offset: 0x1000, Path: "/usr/bin/x y", Name: "/usr/bin/x y", Exec: true},
		{Start: 0x7ffd1000, End: 0x7ffd3000, Name: "[vdso]", Exec: true},
		{Start: 0x7f1000000000, End: 0x7f1000001000, Path: "/lib/libgone.so", Name: "/lib/libgone.so (deleted)", Exec: true},
	}
	if len(maps) != len(want) {
		t.Fatalf("%d mappings, want %d: %+v", len(maps), len(want), maps)
	}
	for i := range want {
		if fmt.Sprint(maps[i]) != fmt.Sprint(want[i]) {
			t.Errorf("mapping %d: %+v, want %+v", i, maps[i], want[i])
		}
	}
	for _, bad := range []string{"zz-10 r-xp 0 00:00 0 /x\n", "10-5 r-xp 0 00:00 0 /x\n", "10-20 r 0 00:00 0 /x\n", "10-20\n"} {
		if _, err := ReadMaps(strings.NewReader(bad)); err == nil {
			t.Errorf("no error for %q", bad)
		} else if _, ok := err.(*MapsError); !ok {
			t.Errorf("%q: error %T, want *MapsError", bad, err)
		}
	}
}

func FuzzReadMaps(f *testing.F) {
	f.Add("55d0c0a00000-55d0c0a01000 r--p 00000000 fe:01 1234   /usr/bin/x\n")
	f.Add("7ffd1000-7ffd3000 r-xp 00000000 00:00 0                  [vdso]\n")
	f.Add("7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n")
	f.Fuzz(func(t *testing.T, text string) {
		maps, err := ReadMaps(strings.NewReader(text))
		for _, m := range maps {
			if m.End <= m.Start {
				t.Fatalf("inverted mapping %+v (err %v)", m, err)
			}
		}
	})
}

// BenchmarkStackSnapshot is the steady state of a profiler: the same
// process, one sample after another (300-deep stack, pcs only).
func BenchmarkStackSnapshot(b *testing.B) {
	s := takeSample(b, []string{"-O2", "-fomit-frame-pointer"}, "deep", "300")
	p, err := New(s.maps, &Options{NoSymbols: true})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	th := p.Thread(&s.regs, s.stack, s.sp)
	var frames []unwind.Frame
	frames, _, _ = th.Walk(frames[:0])
	if len(frames) < 300 {
		b.Fatalf("%d frames", len(frames))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		frames, _, _ = th.Walk(frames[:0])
		n += len(frames)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(n)/(threadCPU()-cpu0).Seconds(), "frames/cpu-s")
}

// TestThreadMemoryCopies checks reads across several copies, overlaps
// (the first copy wins) and gaps (served by the image, here nothing).
func TestThreadMemoryCopies(t *testing.T) {
	p, err := New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var regs unwind.Registers
	th := p.Thread(&regs, []byte("abcdef"), 100)
	th.AddMemory([]byte("XYZuvw"), 103) // overlaps "def": "uvw" lands at 106
	th.AddMemory([]byte("12"), 98)      // right before
	th.AddMemory([]byte("zz"), 200)     // after a gap
	buf := make([]byte, 10)
	n, _ := th.ReadMemory(buf, 98)
	if got := string(buf[:n]); got != "12abcdefuv" {
		t.Errorf("read %q, want %q", got, "12abcdefuv")
	}
	n, _ = th.ReadMemory(buf, 107)
	if got := string(buf[:n]); got != "vw" {
		t.Errorf("read across the gap: %q, want %q (short read)", got, "vw")
	}
	n, _ = th.ReadMemory(buf[:2], 200)
	if string(buf[:n]) != "zz" {
		t.Errorf("read %q", buf[:n])
	}
}

// threadCPU is the calling OS thread's CPU time: on the shared machines
// wall-clock rates swing with the load, CPU time much less.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestSnapshotConcurrentThreads: one Process serves many Threads at once
// (a profiler's workers); every walk gets the same frames. Run with -race.
func TestSnapshotConcurrentThreads(t *testing.T) {
	s := takeSample(t, []string{"-O2", "-fomit-frame-pointer"}, "deep", "50")
	p, err := New(s.maps, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	errs := make(chan string, 4)
	for g := 0; g < 4; g++ {
		go func() {
			th := p.Thread(&s.regs, s.stack, s.sp)
			for i := 0; i < 20; i++ {
				got, err := th.Backtrace(unwind.BacktraceOptions{})
				if err != nil || len(got.Frames) != len(s.want.Frames) {
					errs <- fmt.Sprintf("walk %d: %d frames, %v", i, len(got.Frames), err)
					return
				}
				for j := range got.Frames {
					if got.Frames[j].PC != s.want.Frames[j].PC || got.Frames[j].Symbol != s.want.Frames[j].Symbol {
						errs <- fmt.Sprintf("walk %d frame %d differs", i, j)
						return
					}
				}
			}
			errs <- ""
		}()
	}
	for g := 0; g < 4; g++ {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}

// TestThreadReadsImageChanges checks that a Thread's reads of the image
// (through its memimage.Reader) see changes made to the image after the
// Thread was made: a breakpoint's original byte, a section added, one
// removed.
func TestThreadReadsImageChanges(t *testing.T) {
	p, err := New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var regs unwind.Registers
	th := p.Thread(&regs, []byte("stack"), 0x9000)
	code, _ := memimage.NewMemorySection("code", []byte("0123456789abcdef"))
	if err := p.Image().Add(code, memimage.AnyASID, 0x1000); err != nil {
		t.Fatal(err)
	}
	read := func(addr uint64, size int) string {
		t.Helper()
		buf := make([]byte, size)
		n, _ := th.ReadMemory(buf, addr)
		return string(buf[:n])
	}
	if got := read(0x1004, 8); got != "456789ab" {
		t.Fatalf("read %q", got)
	}
	p.Image().SetOriginal(memimage.AnyASID, 0x1006, []byte("X"))
	if got := read(0x1004, 8); got != "45X789ab" {
		t.Errorf("after SetOriginal: %q", got)
	}
	p.Image().RemoveFile("code", memimage.AnyASID)
	p.Image().ClearOriginal(memimage.AnyASID, 0x1006, 1)
	if got := read(0x1004, 8); got != "" {
		t.Errorf("after removing the section: %q", got)
	}
	if got := read(0x9001, 3); got != "tac" {
		t.Errorf("stack copy: %q", got)
	}
}
