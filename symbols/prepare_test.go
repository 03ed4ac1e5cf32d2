package symbols

import (
	"math"
	"slices"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestPrepare: Prepare reads the unit index; for an executable also the
// symbol table and the function index of its large units; and lookups
// answer the same after it.
func TestPrepare(t *testing.T) {
	path := testprog.Build(t, testprog.Spec{Sources: []string{"dw_inline.c", "dw_second.c"}, Flags: []string{"-O2"}, Name: "dw_two_units"})
	addrs := codeAddresses(t, path)
	var want []string
	withFuncScopes(math.MaxUint64, 0, func() { want, _ = lookupEach(t, path, addrs) })
	withFuncScopes(0, math.MaxInt, func() {
		lib := open(t, path)
		lib.Prepare(false)
		if !lib.dw.indexed.Load() || lib.symsReady.Load() {
			t.Fatalf("Prepare(false): indexed %v, symbols read %v; want the index only", lib.dw.indexed.Load(), lib.symsReady.Load())
		}
		exe := open(t, path)
		exe.Prepare(true)
		if !exe.dw.indexed.Load() || !exe.symsReady.Load() {
			t.Fatalf("Prepare(true): indexed %v, symbols read %v", exe.dw.indexed.Load(), exe.symsReady.Load())
		}
		for _, cu := range exe.dw.units {
			if cu.funcs.Load() == nil {
				t.Errorf("unit %s has no function index after Prepare(true)", cu.name)
			}
		}
		if got := answers(exe, addrs); !slices.Equal(got, want) {
			t.Errorf("lookups after Prepare differ from those without")
		}
	})
}
