package elfsym

import (
	"debug/elf"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
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

func BenchmarkByName(b *testing.B) {
	tab := benchTable(b)
	for i := 0; i < b.N; i++ {
		tab.ByName("malloc")
	}
}

// BenchmarkVersusAddr2line symbolizes the same 100,000 random addresses
// with symbol tables only (libc's build-id debug file with its DWARF
// stripped) through binutils addr2line -f and through this package, start-up
// included in both ("cold": open + index + look up), and reports
// addresses per second for each.
func BenchmarkVersusAddr2line(b *testing.B) {
	libc, debug := libcDebugFile(b)
	_ = libc
	needTool(b, "addr2line")
	needTool(b, "objcopy")
	symOnly := filepath.Join(b.TempDir(), "libc-symtab-only")
	run(b, "objcopy", "--strip-debug", debug, symOnly)
	tab := openTable(b, symOnly)
	syms := tab.Symbols()
	lo, hi := syms[0].Addr, syms[len(syms)-1].End()
	r := rand.New(rand.NewPCG(3, 4))
	const n = 100000
	addrs := make([]uint64, n)
	var input strings.Builder
	for i := range addrs {
		addrs[i] = lo + r.Uint64N(hi-lo)
		fmt.Fprintf(&input, "%#x\n", addrs[i])
	}
	b.Run("sonde-cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			t, err := Open(symOnly)
			if err != nil {
				b.Fatal(err)
			}
			for _, a := range addrs {
				if s, _, ok := t.Lookup(a); ok {
					_ = s.Demangled()
				}
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "addr/s")
	})
	b.Run("addr2line", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			cmd := exec.Command("addr2line", "-f", "-C", "-e", symOnly)
			cmd.Stdin = strings.NewReader(input.String())
			if out, err := cmd.Output(); err != nil || len(out) == 0 {
				b.Fatalf("addr2line: %v", err)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "addr/s")
	})
}
