package probes

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/ptrace"
)

// run is one traced run of a test program.
type run struct {
	t      testing.TB
	tg     *target.Target
	proc   *target.Context
	path   string
	set    *Set
	out    chan string
	exited chan target.ExitStatus
}

func buildProg(t testing.TB, pie bool) string {
	flags := []string{"-O2"}
	name := "pr_count_pie"
	if !pie {
		flags = append(flags, "-no-pie", "-fno-pie")
		name = "pr_count_nopie"
	}
	return testprog.Build(t, testprog.Spec{Sources: []string{"pr_count.c"}, Flags: flags, Name: name})
}

// start launches path stopped at its entry, with a probe set.
func start(t testing.TB, path string, args ...string) *run {
	t.Helper()
	tg, err := ptrace.New()
	if err != nil {
		t.Fatal(err)
	}
	r := &run{t: t, tg: tg, path: path, out: make(chan string, 1), exited: make(chan target.ExitStatus, 1)}
	proc, pio, err := tg.Launch(target.LaunchOptions{Path: path, Argv: append([]string{path}, args...), StopAtEntry: true, Stdio: target.StdioPipes})
	if err != nil {
		tg.Close()
		t.Fatal(err)
	}
	r.proc = proc
	t.Cleanup(func() { tg.Close() })
	testprog.KillAtCleanup(t, proc.PID()) // before tg.Close (cleanups run last first)
	pio.Stdin.Close()
	go func() { b, _ := io.ReadAll(pio.Stdout); r.out <- string(b) }()
	go io.Copy(io.Discard, pio.Stderr)
	tg.AddListener(func(e target.Event) {
		if e.Kind == target.EventExited && e.Context == proc && e.Exit != nil {
			r.exited <- *e.Exit
		}
	})
	r.set, err = New(tg, proc)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// function returns a function of the program by its ELF symbol, as in memory.
func (r *run) function(name string) (uint64, *Function) {
	r.t.Helper()
	f, err := elf.Open(r.path)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	var bias uint64
	if f.Type == elf.ET_DYN {
		regions, err := r.proc.MemoryMap()
		if err != nil {
			r.t.Fatal(err)
		}
		for _, m := range regions {
			if m.FileName == r.path && m.Offset == 0 {
				bias = m.Addr
				break
			}
		}
	}
	for _, s := range syms {
		if s.Name != name {
			continue
		}
		if s.Size == 0 {
			return bias + s.Value, nil
		}
		code := make([]byte, s.Size+15)
		if _, err := r.proc.ReadMemory(bias+s.Value, code); err != nil {
			r.t.Fatal(err)
		}
		// The test programs' C functions are followed by alignment padding
		// or by the next function (whose first instruction is no nop).
		return bias + s.Value, &Function{Name: name, Lo: bias + s.Value, Code: code[:s.Size], Padding: code[s.Size:]}
	}
	r.t.Fatalf("no symbol %s in %s", name, r.path)
	return 0, nil
}

func (r *run) probe(name string) *Probe {
	r.t.Helper()
	addr, fn := r.function(name)
	p, err := r.set.AddCount(name, addr, fn)
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

// finish runs the program to its end and returns its output.
func (r *run) finish() string {
	r.t.Helper()
	if err := r.proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		r.t.Fatal(err)
	}
	select {
	case st := <-r.exited:
		if st.Code != 0 || st.Signal != 0 {
			r.t.Fatalf("program exit: %s", st)
		}
	case <-time.After(60 * time.Second):
		r.t.Fatal("program did not exit within 60 s")
	}
	return <-r.out
}

// untraced returns the program's output when run without sonde.
func untraced(t testing.TB, path string, args ...string) string {
	out, err := exec.Command(path, args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestCountExact: a counting probe on a hot function counts 10 million calls
// exactly, in a PIE and a non-PIE build, and the program's results equal the
// uninstrumented run's.
func TestCountExact(t *testing.T) {
	for _, pie := range []bool{true, false} {
		t.Run(fmt.Sprintf("pie=%v", pie), func(t *testing.T) {
			path := buildProg(t, pie)
			const n = 10_000_000
			r := start(t, path, fmt.Sprint(n))
			p := r.probe("hot")
			if p.Kind != KindProbe {
				t.Fatalf("hot: %s (%s), want a jump probe", p.Kind, p.Fallback)
			}
			c := r.set.caches[0]
			if !c.serves(p.Addr, p.Addr+1) {
				t.Fatalf("cache at %#x out of reach of %#x", c.lo, p.Addr)
			}
			out := r.finish()
			if got := p.Hits(); got != n {
				t.Errorf("hits = %d, want %d", got, n)
			}
			if want := untraced(t, path, fmt.Sprint(n)); out != want {
				t.Errorf("output %q, untraced %q", out, want)
			}
		})
	}
}

// TestFallbacks: sites that cannot be jump-patched become breakpoints that
// still count every call, and say why.
func TestFallbacks(t *testing.T) {
	path := buildProg(t, true)
	const n = 200
	r := start(t, path, fmt.Sprint(n))
	cases := []struct{ name, why string }{
		{"tiny", "does not fit"},
		{"bt_start", "inside the patched range"},
	}
	var ps []*Probe
	for _, c := range cases {
		p := r.probe(c.name)
		if p.Kind != KindBreakpoint || !strings.Contains(p.Fallback, c.why) {
			t.Errorf("%s: kind %s, fallback %q; want a breakpoint because %q", c.name, p.Kind, p.Fallback, c.why)
		}
		ps = append(ps, p)
	}
	// An asm label without a size: no function to check it against.
	addr, fn := r.function("bt_label")
	lp, err := r.set.AddCount("bt_label", addr, fn)
	if err != nil {
		t.Fatal(err)
	}
	if lp.Kind != KindBreakpoint || lp.Fallback == "" {
		t.Errorf("bt_label: kind %s, fallback %q", lp.Kind, lp.Fallback)
	}
	out := r.finish()
	for _, p := range ps {
		if p.Hits() != n {
			t.Errorf("%s: %d hits, want %d", p.Location, p.Hits(), n)
		}
	}
	if lp.Hits() != 3*n {
		t.Errorf("bt_label: %d hits, want %d", lp.Hits(), 3*n)
	}
	if want := untraced(t, path, fmt.Sprint(n)); out != want {
		t.Errorf("output %q, untraced %q", out, want)
	}
}

// TestDetachRestores: with probes firing in a running program, detaching
// (Close) removes every probe and frees the code cache; the text is
// byte-identical to the file and the program runs on to a correct result.
func TestDetachRestores(t *testing.T) {
	path := buildProg(t, true)
	const n = 50_000_000
	r := start(t, path, fmt.Sprint(n))
	p := r.probe("hot")
	if p.Kind != KindProbe {
		t.Fatalf("hot: %s (%s)", p.Kind, p.Fallback)
	}
	cacheLo := r.set.caches[0].lo
	if err := r.proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	// From the entry stop the program first runs the dynamic loader: a
	// few milliseconds on a quiet machine, far more on a loaded one.
	for deadline := time.Now().Add(30 * time.Second); p.Hits() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no hit within 30 s of the resume")
		}
	}
	pid := r.proc.PID()
	if err := r.tg.Close(); err != nil {
		t.Fatal(err)
	}
	before := p.Hits()
	if before == 0 || before >= n {
		t.Errorf("hits at detach: %d", before)
	}
	mem, file := testprog.MappedText(t, pid, path)
	if !bytes.Equal(mem, file) {
		t.Errorf("text differs from the file after detach")
	}
	maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if bytes.Contains(maps, []byte(fmt.Sprintf("%x-", cacheLo))) {
		t.Errorf("code cache at %#x still mapped:\n%s", cacheLo, maps)
	}
	// The program (sonde's child) runs on untraced and ends well.
	out := <-r.out
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err == nil && (!ws.Exited() || ws.ExitStatus() != 0) {
		t.Errorf("program after detach: status %#x", ws)
	}
	if want := untraced(t, path, fmt.Sprint(n)); out != want {
		t.Errorf("output %q, untraced %q", out, want)
	}
}

// TestRelocatedSites: probes whose patched range holds a rip-relative load,
// a call rel32 or a jcc rel8 count every call and leave the program's results
// as they are untraced.
func TestRelocatedSites(t *testing.T) {
	for _, pie := range []bool{true, false} {
		t.Run(fmt.Sprintf("pie=%v", pie), func(t *testing.T) {
			path := buildProg(t, pie)
			const n = 1_000_000
			r := start(t, path, fmt.Sprint(n))
			var ps []*Probe
			for _, name := range []string{"hot", "ripload", "withcall", "jcc_fn", "leaf2"} {
				p := r.probe(name)
				if p.Kind != KindProbe {
					t.Errorf("%s: %s (%s), want a jump probe", name, p.Kind, p.Fallback)
				}
				ps = append(ps, p)
			}
			out := r.finish()
			for _, p := range ps {
				if got, want := p.Hits(), uint64(n); got != want {
					t.Errorf("%s: hits = %d, want %d", p.Location, got, want)
				}
			}
			if want := untraced(t, path, fmt.Sprint(n)); out != want {
				t.Errorf("output %q, untraced %q", out, want)
			}
		})
	}
}

// TestLatency: latency probes on a loop, a recursive function and a function
// a C++ exception is thrown through: every call counted, every call that
// returned timed exactly once (those left by the exception are not), the
// exception still reaches main's handler and the results are untraced ones.
func TestLatency(t *testing.T) {
	path := testprog.Build(t, testprog.Spec{Sources: []string{"pr_latency.cc"}, Flags: []string{"-O2"}})
	const n = 30000
	r := start(t, path, fmt.Sprint(n))
	want := map[string][2]uint64{ // calls, timed
		"work":    {n, n},
		"fib":     {0, 0}, // as many as gcc left (it turns one recursion into a loop): all timed
		"through": {n, n - n/3},
		"thrower": {n, n - n/3},
	}
	var ps []*Probe
	for _, name := range []string{"work", "fib", "through", "thrower"} {
		addr, fn := r.function(name)
		p, err := r.set.AddLatency(name, addr, fn)
		if err != nil {
			t.Fatal(err)
		}
		if p.Kind != KindProbe || !p.HasLatency() {
			t.Errorf("%s: %s, latency %v (%s)", name, p.Kind, p.HasLatency(), p.Fallback)
		}
		ps = append(ps, p)
	}
	out := r.finish()
	if u := untraced(t, path, fmt.Sprint(n)); out != u {
		t.Errorf("output %q, untraced %q", out, u)
	}
	for _, p := range ps {
		var timed uint64
		h := p.Histogram()
		for _, c := range h {
			timed += c
		}
		w := want[p.Location]
		if w[0] == 0 {
			w = [2]uint64{p.Hits(), p.Hits()}
			if p.Hits() < 1000 {
				t.Errorf("%s: %d calls", p.Location, p.Hits())
			}
		}
		if p.Hits() != w[0] || (p.HasLatency() && timed != w[1]) {
			t.Errorf("%s: %d calls, %d timed; want %d, %d (histogram %v)", p.Location, p.Hits(), timed, w[0], w[1], h)
		}
	}
}

// TestInstallRemoveWhileRunning: with four threads calling tick() in a tight
// loop, the probe goes in and out twenty times (threads caught inside the
// patched range or a trampoline are stepped out); the threads keep running,
// and with the probe in from the start the count is exact.
func TestInstallRemoveWhileRunning(t *testing.T) {
	path := testprog.Build(t, testprog.Spec{Sources: []string{"tp_hotloop.c"}, Flags: []string{"-O2"}})
	const n, threads = 30_000_000, 4
	r := start(t, path, fmt.Sprint(n), fmt.Sprint(threads))
	exact := r.probe("tick")
	if exact.Kind != KindProbe {
		t.Fatalf("tick: %s (%s)", exact.Kind, exact.Fallback)
	}
	if err := r.proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		set, err := New(r.tg, r.proc)
		if err != nil {
			t.Fatal(err)
		}
		addr, fn := r.function("other_entry")
		p, err := set.AddCount("other_entry", addr, fn)
		if err != nil {
			t.Fatal(err)
		}
		if p.Kind != KindProbe {
			t.Fatalf("other_entry: %s (%s)", p.Kind, p.Fallback)
		}
		time.Sleep(5 * time.Millisecond)
		if err := set.Close(); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	select {
	case st := <-r.exited:
		if st.Code != 0 || st.Signal != 0 {
			t.Fatalf("program exit: %s", st)
		}
	case <-time.After(120 * time.Second):
		t.Fatal("program did not exit within 120 s")
	}
	if got := exact.Hits(); got != n*threads {
		t.Errorf("tick: %d hits, want %d", got, n*threads)
	}
}

// TestConditional: conditions compiled into the payload count (or trap)
// only where they hold, on registers and on a global; a breakpoint fallback
// evaluates the same condition in sonde.
func TestConditional(t *testing.T) {
	for _, pie := range []bool{true, false} {
		t.Run(fmt.Sprintf("pie=%v", pie), func(t *testing.T) {
			path := buildProg(t, pie)
			const n = 20_000
			r := start(t, path, fmt.Sprint(n))
			gvar, _ := r.function("gvar")
			hotAddr, hotFn := r.function("hot")
			ripAddr, ripFn := r.function("ripload")
			jccAddr, jccFn := r.function("jcc_fn")
			btAddr, btFn := r.function("bt_start")
			type tc struct {
				p    *Probe
				want uint64
				kind Kind
			}
			var cases []tc
			add := func(p *Probe, err error, want uint64, kind Kind) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				cases = append(cases, tc{p, want, kind})
			}
			p, err := r.set.AddCountIf("hot rdi<100", hotAddr, hotFn, Cond{Left: Operand{Reg: "rdi"}, Op: "<", Right: 100})
			add(p, err, 100, KindProbe)
			p, err = r.set.AddCountIf("ripload gvar==7", ripAddr, ripFn, Cond{Left: Operand{Addr: gvar}, Op: "==", Right: 7})
			add(p, err, n, KindProbe)
			p, err = r.set.AddCountIf("jcc_fn rdi!=0", jccAddr, jccFn, Cond{Left: Operand{Reg: "rdi"}, Op: "!=", Right: 0})
			add(p, err, n/2, KindProbe)
			p, err = r.set.AddCountIf("bt_start rdi>3", btAddr, btFn, Cond{Left: Operand{Reg: "rdi"}, Op: ">", Right: 3})
			add(p, err, 0, KindBreakpoint)
			var seen []uint64
			var mu sync.Mutex
			leafAddr, leafFn := r.function("leaf2")
			p, err = r.set.AddTrapIf("leaf2 rdi>=n-3", leafAddr, leafFn, Cond{Left: Operand{Reg: "rdi"}, Op: ">=", Right: n - 3}, func(th *target.Context) {
				regs, err := th.Registers()
				if err != nil {
					t.Error(err)
					return
				}
				v, _ := regs.Uint64(regs.Arch.ByName("rdi"))
				mu.Lock()
				seen = append(seen, v)
				mu.Unlock()
			})
			add(p, err, 3, KindProbe)
			out := r.finish()
			for _, c := range cases {
				if c.p.Kind != c.kind || c.p.Hits() != c.want {
					t.Errorf("%s: %s with %d hits (%s); want %s with %d", c.p.Location, c.p.Kind, c.p.Hits(), c.p.Fallback, c.kind, c.want)
				}
			}
			if fmt.Sprint(seen) != fmt.Sprint([]uint64{n - 3, n - 2, n - 1}) {
				t.Errorf("trap saw rdi %v", seen)
			}
			if u := untraced(t, path, fmt.Sprint(n)); out != u {
				t.Errorf("output %q, untraced %q", out, u)
			}
		})
	}
}

// TestStopsNeverInCache: a process whose hot loop spends most of its time in
// a probe's trampoline is suspended 200 times: no thread is ever reported
// (or shows registers) with a pc in the code cache.
func TestStopsNeverInCache(t *testing.T) {
	path := buildProg(t, true)
	r := start(t, path, "1000000000000")
	p := r.probe("hot")
	if p.Kind != KindProbe {
		t.Fatalf("hot: %s (%s)", p.Kind, p.Fallback)
	}
	c := r.set.caches[0]
	if err := r.proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	inHot := 0
	for i := 0; i < 200; i++ {
		if err := r.proc.Suspend(); err != nil {
			t.Fatal(err)
		}
		for _, th := range r.proc.Children() {
			_, _, pc := th.State()
			regs, err := th.Registers()
			if err != nil {
				t.Fatal(err)
			}
			if c.contains(pc) || c.contains(regs.PC()) {
				t.Fatalf("stop %d: thread %s at %#x (registers %#x), inside the code cache [%#x, %#x)", i, th.ID(), pc, regs.PC(), c.lo, c.hi())
			}
			if pc >= p.Addr && pc < p.Addr+16 {
				inHot++
			}
		}
		if err := r.proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	if p.Hits() == 0 {
		t.Error("the probe never fired")
	}
	t.Logf("%d of 200 stops right after the trampoline (in hot)", inHot)
}
