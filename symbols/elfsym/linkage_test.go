package elfsym

import (
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestByLinkageName: every symbol of a C++ program is found by its linkage
// name as ByName finds it, a demangled name is not, and no lookup (a miss
// included) builds the demangled index — what made a tail-call search in
// a JVM demangle libjvm.so's 54k names.
func TestByLinkageName(t *testing.T) {
	bin := testprog.Build(t, testprog.Spec{Sources: []string{"sym_cxx.cc"}, Flags: []string{"-O2"}})
	tab := openTable(t, bin)
	mangled := 0
	for _, s := range tab.Symbols() {
		got, want := tab.ByLinkageName(s.Name), tab.byNameOnly(s.Name)
		if len(got) == 0 || len(got) != len(want) {
			t.Errorf("ByLinkageName(%q): %d symbols, want %d", s.Name, len(got), len(want))
			continue
		}
		for i := range got {
			if got[i].Addr != want[i].Addr || got[i].Name != want[i].Name {
				t.Errorf("ByLinkageName(%q)[%d] = %#x %s, want %#x %s", s.Name, i, got[i].Addr, got[i].Name, want[i].Addr, want[i].Name)
			}
		}
		if d := s.Demangled(); d != s.Name {
			mangled++
			if n := len(tab.ByLinkageName(d)); n != 0 {
				t.Errorf("ByLinkageName(%q) (demangled) found %d symbols", d, n)
			}
		}
	}
	if len(tab.ByLinkageName("no_such_function")) != 0 {
		t.Error("ByLinkageName found a missing name")
	}
	if mangled == 0 {
		t.Fatal("no mangled symbol in the C++ program: the test checks nothing")
	}
	if tab.byDemangled != nil {
		t.Error("ByLinkageName built the demangled-name index")
	}
}

// byNameOnly is ByName's linkage-name half, read from the index directly.
func (t *Table) byNameOnly(name string) []Symbol {
	t.namesOnce.Do(t.indexNames)
	var out []Symbol
	for _, i := range t.byName[name] {
		out = append(out, t.syms[i])
	}
	return out
}
