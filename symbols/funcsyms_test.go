package symbols

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/symbols/elfsym"
)

// functionSymbolsFromTable is FunctionSymbols's answer from the full symbol
// table, the way it answers once the table is built.
func functionSymbolsFromTable(b *Binary, name string) []FunctionSymbol {
	var out []FunctionSymbol
	for _, s := range b.symbolsByName(name, elfsym.KindFunc, elfsym.KindIFunc) {
		if s.Addr != 0 {
			out = append(out, FunctionSymbol{Addr: s.Addr, Size: s.Size, Bind: s.Bind})
		}
	}
	return out
}

// TestFunctionSymbolsMatchTable: for every symbol name of libc (with its
// separate debug file when installed) and of C and C++ test programs, their
// demangled forms, and names that are not there, FunctionSymbols answers
// from the index (before the table is built) as from the symbol table.
func TestFunctionSymbolsMatchTable(t *testing.T) {
	paths := []string{build(t, "dw_inline.c", "-O2"), build(t, "dw_cxx.cc", "-O2")}
	if _, err := os.Stat("/lib/x86_64-linux-gnu/libc.so.6"); err == nil {
		paths = append(paths, "/lib/x86_64-linux-gnu/libc.so.6")
	}
	for _, p := range paths {
		fast := openWith(t, p, &Options{NoPersistentCache: true})
		names := []string{"", "no_such_function", "main@plt", "@"}
		for _, s := range openWith(t, p, &Options{NoPersistentCache: true}).symbols().Symbols() {
			names = append(names, s.Name, s.Name+"@"+s.Version)
			if d := s.Demangled(); d != s.Name {
				names = append(names, d)
			}
		}
		answers := make([][]FunctionSymbol, len(names))
		for i, n := range names {
			if !strings.HasSuffix(n, "@plt") && !strings.Contains(n, "::") && !strings.Contains(n, "(") {
				answers[i], _ = fast.FunctionSymbols(n)
			}
		}
		// A binary with mangled names answers a name it lacks from the table
		// (which also finds symbols by their demangled names).
		if fast.symsReady.Load() && !fast.fsyms.mangled {
			t.Fatalf("%s: FunctionSymbols built the symbol table", p)
		}
		for i, n := range names { // PLT stubs and demangled names: from the table, built now
			if strings.HasSuffix(n, "@plt") || strings.Contains(n, "::") || strings.Contains(n, "(") {
				answers[i], _ = fast.FunctionSymbols(n)
			}
		}
		found, several := 0, 0
		for i, n := range names {
			want := functionSymbolsFromTable(fast, n)
			if !reflect.DeepEqual(answers[i], want) {
				t.Errorf("%s: FunctionSymbols(%q) = %v from the index, %v from the table", p, n, answers[i], want)
			}
			if len(want) > 0 {
				found++
			}
			if len(want) > 1 {
				several++
			}
		}
		if found < 5 {
			t.Errorf("%s: only %d functions found", p, found)
		}
		t.Logf("%s: %d names, %d found, %d with several symbols", p, len(names), found, several)
	}
}

// BenchmarkFunctionSymbolsFirst: open libc and resolve one call target by
// name, the first time (what reading a frame's entry values costs); against
// BenchmarkFunctionSymbolsTable, the same answer from the symbol table.
func BenchmarkFunctionSymbolsFirst(b *testing.B) {
	benchFunctionSymbols(b, func(bin *Binary) { bin.FunctionSymbols("nanosleep") })
}

func BenchmarkFunctionSymbolsTable(b *testing.B) {
	benchFunctionSymbols(b, func(bin *Binary) { functionSymbolsFromTable(bin, "nanosleep") })
}

func benchFunctionSymbols(b *testing.B, lookup func(*Binary)) {
	path := "/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(path); err != nil {
		b.Skipf("%s not present", path)
	}
	for b.Loop() {
		bin, err := Open(path, &Options{NoPersistentCache: true})
		if err != nil {
			b.Fatal(err)
		}
		lookup(bin)
		bin.Close()
	}
}

// BenchmarkFunctionSymbolIndex: what a stack of 8 threads asks libc's
// function-symbol index: 20 names, from an index not set up yet.
func BenchmarkFunctionSymbolIndex(b *testing.B) {
	names := []string{"nanosleep", "__clock_nanosleep", "__futex_abstimed_wait_common", "clone3",
		"start_thread", "__pthread_cond_wait", "select", "poll", "sigwait", "__sigtimedwait", "read",
		"pause", "__GI___nanosleep", "_dl_catch_error", "memcpy", "strlen", "no_such_name", "malloc", "free", "abort"}
	path := "/lib/x86_64-linux-gnu/libc.so.6"
	bin, err := Open(path, &Options{NoPersistentCache: true})
	if err != nil {
		b.Skipf("%s: %v", path, err)
	}
	defer bin.Close()
	cpu := startCPU()
	for b.Loop() {
		bin.fsyms = funcSymIndex{}
		for _, n := range names {
			bin.FunctionSymbols(n)
			bin.FunctionAddress(n)
		}
	}
	b.ReportMetric(cpu()*1000/float64(b.N), "cpu-ms/op")
}
