package elfsym

import (
	"debug/elf"
	"math/rand/v2"
	"testing"
)

// benchTable is libc's full symbol table (binary + build-id debug file)
// when installed, else the test program's.
func benchTable(b *testing.B) *Table {
	b.Helper()
	libc, debug := "/lib/x86_64-linux-gnu/libc.so.6", ""
	func() {
		defer func() { recover() }()
		libc, debug = libcDebugFile(b)
	}()
	var files []*elf.File
	for _, p := range []string{libc, debug} {
		if p == "" {
			continue
		}
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		b.Cleanup(func() { f.Close() })
		files = append(files, f)
	}
	if len(files) == 0 {
		return openTable(b, buildPLT(b, "lazy", []string{"-O1"}))
	}
	tab, err := New("libc", files...)
	if err != nil {
		b.Fatal(err)
	}
	return tab
}

func BenchmarkLookup(b *testing.B) {
	tab := benchTable(b)
	syms := tab.Symbols()
	lo, hi := syms[0].Addr, syms[len(syms)-1].End()
	r := rand.New(rand.NewPCG(1, 2))
	addrs := make([]uint64, 1<<16)
	for i := range addrs {
		addrs[i] = lo + r.Uint64N(hi-lo)
	}
	b.ReportMetric(float64(tab.Len()), "symbols")
	b.ResetTimer()
	found := 0
	for i := 0; i < b.N; i++ {
		if _, _, ok := tab.Lookup(addrs[i&(len(addrs)-1)]); ok {
			found++
		}
	}
	_ = found
}

func BenchmarkLookupParallel(b *testing.B) {
	tab := benchTable(b)
	syms := tab.Symbols()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			s := syms[i%len(syms)]
			tab.Lookup(s.Addr + s.Size/2)
			i += 7919
		}
	})
}

func BenchmarkBuildLibc(b *testing.B) {
	benchTable(b) // skip early if absent, warm the page cache
	libc, debug := libcDebugFile(b)
	for i := 0; i < b.N; i++ {
		lf, _ := elf.Open(libc)
		df, _ := elf.Open(debug)
		if _, err := New("libc", lf, df); err != nil {
			b.Fatal(err)
		}
		lf.Close()
		df.Close()
	}
}

func BenchmarkDemangledByName(b *testing.B) {
	tab := benchTable(b)
	for i := 0; i < b.N; i++ {
		tab.ByName("malloc")
	}
}
