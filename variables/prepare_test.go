package variables

import (
	"reflect"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols"
)

// TestPrepareUnitAtMatchesOnDemand: the function index PrepareUnitAt
// builds for main's unit is the one the first ScopesAt builds on demand,
// and a ScopesAt after it finds the same function as a Reader that was
// not prepared.
func TestPrepareUnitAtMatchesOnDemand(t *testing.T) {
	for _, src := range []string{"dapclient_prog.c", "dapclient_prog.cc"} {
		path := testprog.Build(t, testprog.Spec{Sources: []string{src}, Flags: []string{"-O0"}})
		prepared, fresh := openReader(t, path), openReader(t, path)
		b, err := symbols.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		main, _, ok := b.FunctionAddress("main")
		b.Close()
		if !ok {
			t.Fatalf("%s: no main", src)
		}
		prepared.PrepareUnitAt(main)
		prepared.mu.Lock()
		idx := prepared.funcIdx
		prepared.mu.Unlock()
		if len(idx) == 0 {
			t.Fatalf("%s: PrepareUnitAt(main %#x) indexed no unit", src, main)
		}
		fresh.mu.Lock()
		for ui, spans := range idx {
			if want := fresh.unitFuncs(ui); !reflect.DeepEqual(spans, want) {
				t.Errorf("%s: unit %d: prepared %d functions, on demand %d", src, ui, len(spans), len(want))
			}
		}
		fresh.mu.Unlock()
		a, err1 := prepared.ScopesAt(main)
		c, err2 := fresh.ScopesAt(main)
		if err1 != nil || err2 != nil || len(a) == 0 || len(a) != len(c) || a[0].Name != c[0].Name || a[0].Offset != c[0].Offset {
			t.Errorf("%s: ScopesAt(main) prepared %v %v, on demand %v %v", src, a, err1, c, err2)
		}
	}
}
