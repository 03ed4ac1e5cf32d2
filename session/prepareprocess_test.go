package session

import (
	"bufio"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/ptrace"
)

// TestPrepareProcessOpensLibcAndExe: PrepareProcess, given a live
// process, opens exactly its C library and its executable, as the very
// files the stack's modules are (by the paths the memory map gives them),
// so that a stack's lookups find them read: asking the session for those
// modules' files afterwards opens nothing new.
func TestPrepareProcessOpensLibcAndExe(t *testing.T) {
	_, pid := deepTarget(t)
	s := liveSession(t, pid)
	s.PrepareProcess(pid, true)
	s.mu.Lock()
	prepared := len(s.files)
	s.mu.Unlock()
	if prepared != 2 {
		t.Fatalf("%d files prepared, want 2 (libc and the executable)", prepared)
	}
	mods, err := s.Modules(mainThread(t, s))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, m := range mods {
		if m.VDSO || m.Path == "" || !(m.Main || isCLibrary(m.Path)) {
			continue
		}
		found++
		if _, err := s.file(m); err != nil {
			t.Fatalf("%s: %v", m.Path, err)
		}
		s.mu.Lock()
		n := len(s.files)
		s.mu.Unlock()
		if n != prepared {
			t.Errorf("module %s (%s) was not among the prepared files", m.Name, m.Path)
			prepared = n
		}
	}
	if found != 2 {
		t.Fatalf("found %d of libc and the executable among the modules %v", found, mods)
	}
}

// TestPrepareProcessGone: a process that is not there prepares nothing.
func TestPrepareProcessGone(t *testing.T) {
	s := &Session{files: map[fileKey]*file{}}
	s.PrepareProcess(1<<30, true)
	if len(s.files) != 0 {
		t.Fatalf("%d files opened", len(s.files))
	}
}

// BenchmarkFirstStackLive: a first `sonde stack` in process, with the
// persisted cache off (so libc's compressed debug sections are inflated in
// every iteration, as on a machine without a cache): attach to a process
// of 9 threads, then every thread's backtrace and arguments, with the C
// library's and the executable's symbols read ahead during the attach
// (prepared, as sonde stack does) or only when the first frame asks
// (lazy). Each iteration does both, in alternating order (the shared
// machine's load changes faster than a sub-benchmark runs), and the
// medians of each are reported (ms), with their CPU time.
func BenchmarkFirstStackLive(b *testing.B) {
	b.Setenv("SONDE_NO_CACHE", "1")
	pid := threadsTarget(b)
	one := func(prepared bool) (wall, cpu time.Duration) {
		t0, c0 := time.Now(), processCPU()
		tg, err := ptrace.New()
		if err != nil {
			b.Fatal(err)
		}
		s := New(tg, Options{})
		if prepared {
			go s.PrepareProcess(pid, true)
		}
		if _, err := tg.Attach(pid, target.AttachOptions{Stop: true}); err != nil {
			b.Fatal(err)
		}
		frames := 0
		for _, th := range tg.Processes()[0].Children() {
			st, err := s.Stack(th, StackOptions{})
			if err != nil {
				b.Fatal(err)
			}
			frames += len(st.FrameVariables(-1, FrameVarsOptions{}))
		}
		tg.Close()
		if frames < 9 {
			b.Fatalf("%d frames", frames)
		}
		return time.Since(t0), processCPU() - c0
	}
	var walls, cpus [2][]time.Duration
	n := 0
	for b.Loop() {
		for k := range 2 {
			prepared := (n+k)%2 == 0
			w, c := one(prepared)
			i := 0
			if !prepared {
				i = 1
			}
			walls[i], cpus[i] = append(walls[i], w), append(cpus[i], c)
		}
		n++
	}
	ms := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2]) / 1e6
	}
	b.ReportMetric(ms(walls[0]), "prepared-ms")
	b.ReportMetric(ms(walls[1]), "lazy-ms")
	b.ReportMetric(ms(cpus[0]), "prepared-cpu-ms")
	b.ReportMetric(ms(cpus[1]), "lazy-cpu-ms")
}

// processCPU is the CPU time (user and system) of the test process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// threadsTarget starts stk_threads.c with 8 threads blocked in different
// calls (9 tasks) and returns its pid.
func threadsTarget(tb testing.TB) int {
	tb.Helper()
	path := testprog.Build(tb, testprog.Spec{Sources: []string{"stk_threads.c"}, Flags: []string{"-O2", "-pthread"}, Name: "stk-threads-O2"})
	cmd := exec.Command(path, "threads", "8")
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
	time.Sleep(100 * time.Millisecond)
	return cmd.Process.Pid
}
