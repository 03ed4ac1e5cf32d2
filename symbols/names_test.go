package symbols

import (
	"debug/elf"
	"strings"
	"testing"
)

// TestUnlinkedNamesMatchGDB: functions DWARF names without a linkage name
// (a GCC lambda's operator(), a template instantiated with a lambda) get
// gdb's spelling, the same in their out-of-line (-O0) and inlined (-O2)
// copies, at every address of the functions involved; with
// Options.SymbolTableNames they take the ELF symbol's demangled name, as
// addr2line does.
func TestUnlinkedNamesMatchGDB(t *testing.T) {
	spellings := map[string]map[string]bool{} // gdb's name (params stripped) -> our spellings
	for _, opt := range []string{"-O0", "-O2"} {
		path := build(t, "stk_cxx.cc", opt)
		b := open(t, path)
		var addrs []uint64
		for _, s := range functionSymbols(t, path) {
			if strings.Contains(s.Name, "UliE_") { // the lambda and what takes it
				for a := s.Value; a < s.Value+s.Size; a++ {
					addrs = append(addrs, a)
				}
			}
		}
		if len(addrs) == 0 {
			t.Fatalf("%s: no lambda-related function symbols", opt)
		}
		chains := gdbChains(t, path, addrs)
		unlinked := 0
		for _, a := range addrs {
			got, err := b.Lookup(a)
			if err != nil {
				t.Fatal(err)
			}
			g := chains[a]
			if len(got) != len(g) {
				t.Errorf("%s %#x: %d frames %v, gdb %v", opt, a, len(got), got, g)
				continue
			}
			for i, f := range got {
				want := g[i]
				if f.LinkageName == "" {
					unlinked++
					// gdb appends a parameter list built from DWARF types
					// ("(struct {...})") that it fails to strip after lambdas.
					if i := strings.LastIndex(want, ">("); i > 0 && !strings.Contains(f.Function, ">(") {
						want = want[:i+1]
					}
					if spellings[want] == nil {
						spellings[want] = map[string]bool{}
					}
					spellings[want][f.Function] = true
				}
				if stripParams(f.Function) != stripParams(want) {
					t.Errorf("%s %#x frame %d: %q, gdb %q", opt, a, i, f.Function, g[i])
				}
			}
		}
		if unlinked == 0 {
			t.Errorf("%s: no frame without a linkage name: the test program changed", opt)
		}
	}
	if !spellings["operator()"]["operator()"] {
		t.Errorf("the lambda's operator() was not named as gdb names it: %v", spellings)
	}
	for gdbName, ours := range spellings {
		if len(ours) != 1 {
			t.Errorf("%q spelled %d ways: %v", gdbName, len(ours), ours)
		}
	}

	// addr2line's way: the ELF symbol's name.
	path := build(t, "stk_cxx.cc", "-O0")
	b, err := Open(path, &Options{SymbolTableNames: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range functionSymbols(t, path) {
		if s.Name == "_ZZ4mainENKUliE_clEi" {
			got, err := b.Lookup(s.Value)
			if err != nil || len(got) != 1 || got[0].Function != "main::{lambda(int)#1}::operator()(int) const" || got[0].LinkageName != s.Name {
				t.Errorf("SymbolTableNames: %v %v", got, err)
			}
			return
		}
	}
	t.Error("no _ZZ4mainENKUliE_clEi in the -O0 build")
}

func functionSymbols(t *testing.T, path string) []elf.Symbol {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var out []elf.Symbol
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
			out = append(out, s)
		}
	}
	return out
}

// TestStaticFunctionNamedAsGDB: a static C++ function (no linkage name in
// DWARF) is named from DWARF without the ELF symbol's mangled name, as gdb
// shows it; addr2line's way (SymbolTableNames) takes the ELF name.
func TestStaticFunctionNamedAsGDB(t *testing.T) {
	path := build(t, "sym_static_cxx.cc", "-O1")
	var sym elf.Symbol
	for _, s := range functionSymbols(t, path) {
		if s.Name == "_ZN2nsL6helperEi" {
			sym = s
		}
	}
	if sym.Value == 0 {
		t.Fatal("no _ZN2nsL6helperEi: the test program changed")
	}
	chains := gdbChains(t, path, []uint64{sym.Value})
	got, err := open(t, path).Lookup(sym.Value)
	if err != nil || len(got) != 1 {
		t.Fatalf("Lookup: %v %v", got, err)
	}
	g := chains[sym.Value]
	if len(g) != 1 || stripParams(got[0].Function) != stripParams(g[0]) || got[0].LinkageName != "" {
		t.Errorf("got %q (linkage %q), gdb %v", got[0].Function, got[0].LinkageName, g)
	}
	b, err := Open(path, &Options{SymbolTableNames: true})
	if err != nil {
		t.Fatal(err)
	}
	if f, err := b.Lookup(sym.Value); err != nil || len(f) != 1 || f[0].LinkageName != sym.Name || f[0].Function != "ns::helper(int)" {
		t.Errorf("SymbolTableNames: %v %v", f, err)
	}
}
