package symbols

import (
	"slices"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/symbols/elfsym"
)

// TestLinkageFunctionSymbols: by a linkage name, LinkageFunctionSymbols
// answers as FunctionSymbols does, before and after the symbol table is
// built; a demangled name, which FunctionSymbols also resolves, it does not.
func TestLinkageFunctionSymbols(t *testing.T) {
	p := build(t, "dw_cxx.cc", "-O2")
	var names, demangled []string
	for _, s := range openWith(t, p, &Options{NoPersistentCache: true}).symbols().Symbols() {
		if s.Kind != elfsym.KindFunc || strings.HasSuffix(s.Name, "@plt") {
			continue
		}
		names = append(names, s.Name)
		if d := s.Demangled(); d != s.Name {
			demangled = append(demangled, d)
		}
	}
	if len(demangled) == 0 {
		t.Fatal("no mangled function in the C++ program: the test checks nothing")
	}
	for _, built := range []bool{false, true} {
		b := openWith(t, p, &Options{NoPersistentCache: true})
		if built {
			b.symbols()
		}
		for _, n := range names {
			got, err1 := b.LinkageFunctionSymbols(n)
			want, err2 := b.FunctionSymbols(n)
			if err1 != nil || err2 != nil || len(got) == 0 || !slices.Equal(got, want) {
				t.Errorf("table built %v: LinkageFunctionSymbols(%q) = %v, %v; FunctionSymbols: %v, %v", built, n, got, err1, want, err2)
			}
		}
		for _, d := range demangled {
			if got, _ := b.LinkageFunctionSymbols(d); len(got) != 0 {
				t.Errorf("table built %v: LinkageFunctionSymbols(%q) (a demangled name) = %v", built, d, got)
			}
		}
		if a, _, ok := b.FunctionAddress(demangled[0]); ok {
			t.Errorf("table built %v: FunctionAddress(%q) (a demangled name) = %#x", built, demangled[0], a)
		}
		if !built && b.symsReady.Load() {
			t.Error("LinkageFunctionSymbols built the symbol table")
		}
	}
}
