package symbols

import (
	"debug/elf"
	"math"
	"math/rand"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// benchLibrary is the large optimized library of the benchmark
// (Debian's libpython3.11-dbg: DWARF 5, ~20k inlined subroutines); the
// SONDE_BENCH_LIB environment variable overrides it.
func benchLibrary(b *testing.B) string {
	p := os.Getenv("SONDE_BENCH_LIB")
	if p == "" {
		p = "/usr/lib/x86_64-linux-gnu/libpython3.11d.so.1.0"
	}
	if _, err := os.Stat(p); err != nil {
		b.Skipf("%s not present (apt-get install libpython3.11-dbg, or set SONDE_BENCH_LIB)", p)
	}
	return p
}

// randomCodeAddresses picks n pseudo-random addresses inside function symbols.
func randomCodeAddresses(b testing.TB, path string, n int) []uint64 {
	f, err := elf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.DynamicSymbols()
	if s, err := f.Symbols(); err == nil {
		syms = append(syms, s...)
	}
	type fn struct{ lo, size uint64 }
	var fns []fn
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && s.Size != 0 {
			fns = append(fns, fn{s.Value, s.Size})
		}
	}
	sort.Slice(fns, func(i, j int) bool { return fns[i].lo < fns[j].lo })
	r := rand.New(rand.NewSource(1))
	out := make([]uint64, n)
	for i := range out {
		f := fns[r.Intn(len(fns))]
		out[i] = f.lo + uint64(r.Int63n(int64(f.size)))
	}
	return out
}

// BenchmarkLookupWarm: lookups (with inline frames) in an already indexed
// library - what a debugger server or profiler backend sees.
func BenchmarkLookupWarm(b *testing.B) {
	path := benchLibrary(b)
	addrs := randomCodeAddresses(b, path, 100000)
	bin, err := Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bin.Close()
	var buf []Frame
	for _, a := range addrs {
		buf, _ = bin.AppendFrames(buf[:0], a)
	}
	b.ReportAllocs()
	cpu := startCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf, _ = bin.AppendFrames(buf[:0], addrs[i%len(addrs)])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "addr/s")
	b.ReportMetric(float64(b.N)/cpu(), "addr/cpu-s")
}

// startCPU returns a function giving the process CPU seconds used since:
// the machines these run on are shared, and CPU time is what a lookup costs
// when it is not waiting for a core.
func startCPU() func() float64 {
	now := func() float64 {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	t0 := now()
	return func() float64 { return now() - t0 }
}

// BenchmarkLookupCold: open the library and look up 100,000 addresses,
// start-up and indexing included (the addr2line comparison).
func BenchmarkLookupCold(b *testing.B) {
	path := benchLibrary(b)
	addrs := randomCodeAddresses(b, path, 100000)
	cpu := startCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bin, err := Open(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		var buf []Frame
		for _, a := range addrs {
			buf, _ = bin.AppendFrames(buf[:0], a)
		}
		bin.Close()
	}
	b.ReportMetric(float64(b.N*len(addrs))/b.Elapsed().Seconds(), "addr/s")
	b.ReportMetric(float64(b.N*len(addrs))/cpu(), "addr/cpu-s")
}

// BenchmarkFirstLookup: open plus one lookup - the lazy index must not
// decode the whole file.
func BenchmarkFirstLookup(b *testing.B) {
	path := benchLibrary(b)
	addrs := randomCodeAddresses(b, path, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bin, err := Open(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		bin.Lookup(addrs[0])
		bin.Close()
	}
}

// BenchmarkLookupWarmSmall runs on a test program, so it works everywhere.
func BenchmarkLookupWarmSmall(b *testing.B) {
	path := build(b, "dw_cxx.cc", "-O2")
	addrs := codeAddresses(b, path)
	bin := open(b, path)
	var buf []Frame
	for _, a := range addrs {
		buf, _ = bin.AppendFrames(buf[:0], a)
	}
	b.ReportAllocs()
	cpu := startCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf, _ = bin.AppendFrames(buf[:0], addrs[i%len(addrs)])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "addr/s")
	b.ReportMetric(float64(b.N)/cpu(), "addr/cpu-s")
}

// BenchmarkFirstLookupFunction: open plus one lookup by name, which reads
// the names of every unit (what a breakpoint on a function costs first).
func BenchmarkFirstLookupFunction(b *testing.B) {
	path := benchLibrary(b)
	for b.Loop() {
		bin, err := Open(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		if insts, err := bin.LookupFunction("malloc"); err != nil || len(insts) == 0 {
			b.Fatalf("malloc: %v %v", insts, err)
		}
		bin.Close()
	}
}

// BenchmarkFirstFrameLargeUnit: open a Rust program and symbolize one
// address in its std unit (800 KB of DIEs, 21,500 functions and inlined
// calls), as a debugger's first stop does for std::rt::lang_start_internal:
// decoding the one function covering it ("function") against decoding the
// whole unit's scope tree ("unit").
func BenchmarkFirstFrameLargeUnit(b *testing.B) {
	path := rustProgram(b)
	var addr uint64
	for name, a := range elfSymbols(b, path) {
		if strings.Contains(name, "lang_start_internal") {
			addr = a + 1
		}
	}
	if addr == 0 {
		b.Fatal("no lang_start_internal symbol")
	}
	for _, mode := range []struct {
		name    string
		minSize uint64
	}{{"function", funcScopesMinSize}, {"unit", math.MaxUint64}} {
		b.Run(mode.name, func(b *testing.B) {
			withFuncScopes(mode.minSize, funcScopesMaxTrees, func() {
				var cpuSec float64
				for i := 0; i < b.N; i++ {
					// Opening and the unit index are the same in both
					// modes (and cached across runs): not timed.
					b.StopTimer()
					bin, err := Open(path, nil)
					if err != nil {
						b.Fatal(err)
					}
					bin.dw.index()
					cpu := startCPU()
					b.StartTimer()
					if frames, err := bin.Lookup(addr); err != nil || len(frames) == 0 {
						b.Fatalf("%#x: %v %v", addr, frames, err)
					}
					b.StopTimer()
					cpuSec += cpu()
					bin.Close()
					b.StartTimer()
				}
				b.ReportMetric(cpuSec*1e3/float64(b.N), "cpu-ms/op")
			})
		})
	}
}
