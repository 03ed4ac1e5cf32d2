package symbols

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// FuzzOpenLookup feeds ELF images through OpenBytes and every kind of
// lookup: nothing may panic or hang.
func FuzzOpenLookup(f *testing.F) {
	for _, flags := range [][]string{{"-O2", "-gdwarf-5"}, {"-O0", "-gdwarf-4"}} {
		path, err := testprog.BuildE(testprog.Spec{Sources: []string{"dw_inline.c"}, Flags: flags, Name: "fuzz_seed"})
		if err != nil {
			f.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint64(0x1150))
	}
	f.Fuzz(func(t *testing.T, data []byte, addr uint64) {
		b, err := OpenBytes("fuzz", data, &Options{NoSearch: true})
		if err != nil {
			return
		}
		defer b.Close()
		for i := uint64(0); i < 64; i += 4 {
			b.Lookup(addr + i)
		}
		b.LookupFunction("main")
		b.FunctionAddress("main")
		b.LookupVariable("dw_global_counter")
		b.LookupLine("dw_inline.c", 30)
		b.LineAt(addr)
		b.LineSequence(addr)
		b.Scopes(addr)
		b.UnwindSections()
		// Every unit decoded one function at a time, read ahead too.
		withFuncScopes(0, math.MaxInt, func() {
			p, err := OpenBytes("fuzz", data, &Options{NoSearch: true})
			if err != nil {
				return
			}
			defer p.Close()
			p.Prepare(true)
			for i := uint64(0); i < 64; i += 4 {
				p.Lookup(addr + i)
				p.CallSiteAt(addr + i)
			}
		})
	})
}

// FuzzSplitUnit feeds .dwo images to the split-DWARF reader, completing the
// skeleton unit of a real -gsplit-dwarf build.
func FuzzSplitUnit(f *testing.F) {
	path, err := testprog.BuildE(testprog.Spec{Sources: []string{"dw_inline.c"}, Flags: []string{"-O2", "-gsplit-dwarf"}, Name: "fuzz_split"})
	if err != nil {
		f.Fatal(err)
	}
	dwos, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.dwo"))
	if len(dwos) != 1 {
		f.Fatalf(".dwo files of %s: %v", path, dwos)
	}
	dwo, err := os.ReadFile(dwos[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(dwo)
	b, err := Open(path, &Options{NoSearch: true})
	if err != nil {
		f.Fatal(err)
	}
	b.dw.index()
	skel := b.dw.units[0]
	if err := skel.readUnitDIE(); err != nil || !skel.isSkeleton() {
		f.Fatalf("no skeleton unit: %v", err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ef, err := newELFFile("fuzz.dwo", data, false)
		if err != nil {
			return
		}
		d, err := newDWARFFile(ef, true)
		if err != nil {
			return
		}
		cu, err := splitUnitIn(d, skel)
		if cu == nil || err != nil {
			return
		}
		if tree, _ := cu.scopeTree(); tree != nil {
			for _, n := range tree.nodes {
				n.name.Display()
			}
		}
	})
}

// FuzzNameKeys: the spellings a function is indexed under are built from
// DWARF names (outside input): any name gives keys without panicking, every
// key is non-empty, and the tails and template-free forms never grow.
func FuzzNameKeys(f *testing.F) {
	for _, s := range []string{"twice<int>", "ns::Stack<std::vector<int> >::push", "operator<<", "a::<lambda(int)>",
		"broken<int", "x>y", "::", "a::::b", "f(int)::g<(1>2)>", ""} {
		f.Add(s, "ns")
	}
	f.Fuzz(func(t *testing.T, raw, prefix string) {
		for _, k := range nameKeys(&fnName{raw: raw, prefix: prefix}) {
			if k == "" {
				t.Fatalf("empty key for %q %q", raw, prefix)
			}
		}
		q := raw
		if prefix != "" {
			q = prefix + "::" + raw
		}
		if s := stripTemplateArgs(q); len(s) > len(q) {
			t.Fatalf("stripTemplateArgs(%q) = %q grew", q, s)
		}
		for _, tail := range qualifiedTails(q) {
			if len(tail) > len(q) {
				t.Fatalf("tail %q of %q", tail, q)
			}
		}
	})
}
