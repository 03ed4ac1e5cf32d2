package symbols

import (
	"debug/elf"
	"os"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/symbols/elfsym"
)

// functionAddressFromTable is FunctionAddress's answer from the full symbol
// table, the way it answers once the table is built.
func functionAddressFromTable(b *Binary, name string) (addr uint64, global, ok bool) {
	for _, s := range b.symbolsByName(name, elfsym.KindFunc, elfsym.KindIFunc) {
		if s.Addr == 0 {
			continue
		}
		if s.Bind != elf.STB_LOCAL {
			return s.Addr, true, true
		}
		if !ok {
			addr, ok = s.Addr, true
		}
	}
	return addr, false, ok
}

// TestFunctionIndexMatchesTable: for every symbol name of libc (with its
// separate debug file when installed) and of C and C++ test programs, and
// names that are not there, FunctionAddress answers from the index (before
// the table is built) as from the symbol table.
func TestFunctionIndexMatchesTable(t *testing.T) {
	paths := []string{build(t, "dw_inline.c", "-O2"), build(t, "dw_cxx.cc", "-O2")}
	if _, err := os.Stat("/lib/x86_64-linux-gnu/libc.so.6"); err == nil {
		paths = append(paths, "/lib/x86_64-linux-gnu/libc.so.6")
	}
	for _, p := range paths {
		fast := openWith(t, p, &Options{NoPersistentCache: true})
		names := []string{"", "no_such_function", "main@plt", "@"}
		for _, s := range openWith(t, p, &Options{NoPersistentCache: true}).symbols().Symbols() {
			names = append(names, s.Name)
		}
		answers := make([][3]any, len(names))
		for i, n := range names {
			if !strings.HasSuffix(n, "@plt") {
				a, g, ok := fast.FunctionAddress(n)
				answers[i] = [3]any{a, g, ok}
			}
		}
		if fast.symsReady.Load() {
			t.Fatalf("%s: FunctionAddress built the symbol table", p)
		}
		for i, n := range names { // PLT stubs: from the table, built now
			if strings.HasSuffix(n, "@plt") {
				a, g, ok := fast.FunctionAddress(n)
				answers[i] = [3]any{a, g, ok}
			}
		}
		checked := 0
		for i, n := range names {
			a, g, ok := functionAddressFromTable(fast, n)
			if want := [3]any{a, g, ok}; answers[i] != want {
				t.Errorf("%s: FunctionAddress(%q) = %v from the index, %v from the table", p, n, answers[i], want)
			}
			if ok {
				checked++
			}
		}
		if checked < 5 {
			t.Errorf("%s: only %d functions found", p, checked)
		}
		t.Logf("%s: %d names, %d functions", p, len(names), checked)
	}
}
