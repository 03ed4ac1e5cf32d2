package variables

import (
	"testing"

	"github.com/sondedbg/sonde/symbols"
)

// TestScopesReadOneUnit: the scopes of a pc in libc (hundreds of units)
// decode the unit covering the pc and the few its DIEs refer to, not every
// unit's DIEs or abbreviations.
func TestScopesReadOneUnit(t *testing.T) {
	b, err := symbols.Open("/lib/x86_64-linux-gnu/libc.so.6", nil)
	if err != nil || !b.HasDWARF() {
		t.Skipf("no libc with DWARF (libc6-dbg, installed by scripts/setup): %v", err)
	}
	defer b.Close()
	pc, _, ok := b.FunctionAddress("__nanosleep")
	if !ok {
		t.Skip("no __nanosleep in libc")
	}
	r, err := New(b)
	if err != nil {
		t.Fatal(err)
	}
	scopes, err := r.ScopesAt(pc + 4)
	if err != nil || len(scopes) == 0 {
		t.Fatalf("%d scopes at %#x: %v", len(scopes), pc+4, err)
	}
	if scopes[len(scopes)-1].Name == "" {
		t.Errorf("function at %#x has no name", pc+4)
	}
	read := 0
	for _, u := range r.units {
		if u.dieRead {
			read++
		}
	}
	if len(r.units) < 100 {
		t.Skipf("libc has %d units: too few to tell", len(r.units))
	}
	if read > 4 || len(r.abbrevs) > 4 {
		t.Errorf("%d of %d unit DIEs and %d abbreviation tables decoded for one pc", read, len(r.units), len(r.abbrevs))
	}
	t.Logf("%d units, %d unit DIEs and %d abbreviation tables read", len(r.units), read, len(r.abbrevs))
}
