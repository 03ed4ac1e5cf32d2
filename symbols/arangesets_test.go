package symbols

import (
	"testing"

	"github.com/sondedbg/sonde/dwarf"
)

// TestEmptyArangeSetsHaveNoCode: the premise of markArangeSets, on libc's
// debug file and gcc-built programs: every unit whose .debug_aranges set
// is empty has no code by its own first DIE either (no usable low_pc/high_pc
// or ranges), so the index, which no longer reads those DIEs, maps the same
// addresses.
func TestEmptyArangeSetsHaveNoCode(t *testing.T) {
	paths := []string{build(t, "dw_inline.c", "-O2"), build(t, "dw_cxx.cc", "-O2"), build(t, "dw_inline.c", "-O0", "-gdwarf-4")}
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	if b, err := Open(libc, &Options{NoPersistentCache: true}); err == nil && b.debug != nil {
		b.Close()
		paths = append(paths, libc)
	} else {
		t.Logf("libc's debug file not installed: checking the test programs only")
	}
	for _, path := range paths {
		b, err := Open(path, &Options{NoPersistentCache: true})
		if err != nil {
			t.Fatal(err)
		}
		d := b.dw
		if d == nil {
			t.Fatalf("%s: no DWARF", path)
		}
		d.index()
		ar, sets, err := dwarf.ReadArangeSets(d.section(secAranges))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		withCode := map[uint64]bool{}
		for _, a := range ar {
			if usableRange(a.Lo, a.Hi) {
				withCode[a.UnitOffset] = true
			}
		}
		empty := 0
		for _, off := range sets {
			if withCode[off] {
				continue
			}
			var cu *compUnit
			for _, u := range d.units {
				if u.hdr.Offset == off {
					cu = u
				}
			}
			if cu == nil {
				t.Fatalf("%s: a set names unit %#x, which is not a unit", path, off)
			}
			empty++
			if err := cu.readUnitDIE(); err != nil {
				t.Fatalf("%s: unit %#x: %v", path, off, err)
			}
			for _, r := range cu.ranges {
				if usableRange(r.Lo, r.Hi) {
					t.Errorf("%s: unit %#x (%s) has an empty .debug_aranges set but code at [%#x, %#x)", path, off, cu.name, r.Lo, r.Hi)
				}
			}
		}
		t.Logf("%s: %d units, %d sets, %d without code", path, len(d.units), len(sets), empty)
		b.Close()
	}
}
