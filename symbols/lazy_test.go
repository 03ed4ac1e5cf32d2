package symbols

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// decodedUnits counts the units whose scope tree or line table exist.
func decodedUnits(b *Binary) int {
	n := 0
	for _, cu := range b.dw.units {
		if cu.scopes != nil || cu.lines != nil || cu.split != nil {
			n++
		}
	}
	return n
}

// TestFirstLookupDecodesOneUnit: the index is lazy - one lookup decodes
// the unit holding the address and no other.
func TestFirstLookupDecodesOneUnit(t *testing.T) {
	path := testprog.Build(t, testprog.Spec{Sources: []string{"dw_inline.c", "dw_second.c"}, Flags: []string{"-O2"}, Name: "dw_two_units"})
	b := open(t, path)
	if decodedUnits(b) != 0 {
		t.Fatal("units decoded before any lookup")
	}
	addr := elfSymbols(t, path)["dw_second_entry"]
	frames, err := b.Lookup(addr)
	if err != nil || len(frames) == 0 {
		t.Fatalf("%v %v", frames, err)
	}
	if frames[len(frames)-1].Function != "dw_second_entry" {
		t.Fatalf("frames %+v", frames)
	}
	if n := decodedUnits(b); n != 1 {
		t.Fatalf("%d units decoded after one lookup, want 1 (of %d)", n, len(b.dw.units))
	}
}

// TestWithoutAranges: without .debug_aranges the units are indexed from
// their own DIEs, with the same answers.
func TestWithoutAranges(t *testing.T) {
	path := testprog.Build(t, testprog.Spec{Sources: []string{"dw_inline.c", "dw_second.c"}, Flags: []string{"-O2"}, Name: "dw_two_units"})
	if _, err := exec.LookPath("objcopy"); err != nil {
		t.Skip("objcopy not installed")
	}
	noAr := filepath.Join(t.TempDir(), "noaranges")
	if out, err := exec.Command("objcopy", "--remove-section=.debug_aranges", path, noAr).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	b := open(t, noAr)
	if b.dw.section(secAranges) != nil {
		t.Fatal(".debug_aranges still there")
	}
	compareAll(t, open(t, path), b, codeAddresses(t, path))
}
