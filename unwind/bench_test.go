package unwind

import (
	"math/rand"
	"strings"
	"testing"
)

// BenchmarkUnwindSnapshot measures warm unwinding from memory (a perf-sample
// or core-file style client): a 300-deep stack through the executable and
// libc, walked again and again with the same Unwinder (module row caches warm).
// The "+reuse" cases keep the record of each walk (Options.ReuseFrames) and
// so replay all but frame 0 of the next, after reading again what it read.
func BenchmarkUnwindSnapshot(b *testing.B) {
	for _, c := range []liveCase{
		{name: "deep", flags: []string{"-O1", "-fomit-frame-pointer"}, args: []string{"recurse", "300"}},
		{name: "O0", flags: []string{"-O0"}, args: []string{"recurse", "300"}},
		{name: "deep+reuse", flags: []string{"-O1", "-fomit-frame-pointer"}, args: []string{"recurse", "300"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			bin := buildCaseTB(b, liveCase{name: strings.TrimSuffix(c.name, "+reuse"), flags: c.flags})
			lt := startLive(b, bin, c.args...)
			s := lt.snapshot(lt.pid)
			u := New(s, s, &Options{ReuseFrames: strings.HasSuffix(c.name, "+reuse")})
			frames := make([]Frame, 0, 512)
			total := 0
			for b.Loop() {
				u.Init()
				var stop StopReason
				frames, stop = u.Walk(frames[:0])
				if stop != StopOutermost {
					b.Fatalf("stop %v: %v", stop, u.Err())
				}
				total += len(frames)
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "frames/s")
			b.ReportMetric(float64(len(frames)), "frames/walk")
		})
	}
}

// BenchmarkRowCached is the engine's per-frame CFI cost once rows are cached.
func BenchmarkRowCached(b *testing.B) {
	ms, _ := offlineModules(b, "/lib/x86_64-linux-gnu/libc.so.6")
	m := ms.modules[0]
	pcs := fdeStarts(b, m)
	for _, pc := range pcs {
		m.row(pc)
	}
	i := 0
	for b.Loop() {
		m.row(pcs[i%len(pcs)])
		i++
	}
}

// fdeStarts returns 256 pcs inside libc functions that have CFI.
func fdeStarts(tb testing.TB, m *Module) []uint64 {
	st := m.Client.(*symtab)
	r := rand.New(rand.NewSource(1))
	var pcs []uint64
	for len(pcs) < 256 {
		s := st.syms[r.Intn(len(st.syms))]
		pc := s.Value + m.Bias + uint64(r.Int63n(int64(s.Size)))
		if row, _ := m.row(pc); row != nil {
			pcs = append(pcs, pc)
		}
	}
	return pcs
}

// BenchmarkUnwindLive is the steady state against a stopped process: CFI rows
// cached, stack memory read through /proc/PID/mem in 512-byte blocks.
func BenchmarkUnwindLive(b *testing.B) {
	c := liveCase{name: "deep", flags: []string{"-O1", "-fomit-frame-pointer"}}
	lt := startLive(b, buildCaseTB(b, c), "recurse", "300")
	th := lt.thread(lt.pid)
	u := New(th, lt, nil)
	frames := make([]Frame, 0, 512)
	total := 0
	for b.Loop() {
		u.Init()
		frames, _ = u.Walk(frames[:0])
		total += len(frames)
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "frames/s")
}

// BenchmarkUnwindCold is one walk with fresh modules: CFI tables built and
// rows decoded on first use (what a one-shot `sonde stack` pays per module).
func BenchmarkUnwindCold(b *testing.B) {
	c := liveCase{name: "deep", flags: []string{"-O1", "-fomit-frame-pointer"}}
	lt := startLive(b, buildCaseTB(b, c), "recurse", "300")
	s := lt.snapshot(lt.pid)
	frames := make([]Frame, 0, 512)
	for b.Loop() {
		b.StopTimer()
		ms := &moduleSet{}
		for _, m := range s.modules {
			ms.modules = append(ms.modules, m.clone())
		}
		s2 := &snapshot{moduleSet: ms, regs: s.regs, regions: s.regions}
		b.StartTimer()
		u := New(s2, s2, nil)
		u.Init()
		frames, _ = u.Walk(frames[:0])
	}
}
