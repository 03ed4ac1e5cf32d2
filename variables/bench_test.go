package variables_test

import (
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/variables"
	"github.com/sondedbg/sonde/variables/vartest"
)

// BenchmarkFrameLocals reads every local of a frame with 50 of them (ints,
// doubles, longs, structs, pointers) on a core, warm: scopes at the pc, then
// locate and load each variable, as a Variables view refresh does.
func BenchmarkFrameLocals(b *testing.B) {
	exe := testprog.Build(b, testprog.Spec{Sources: []string{"ex_many.c"}, Flags: []string{"-O0"}})
	stop := vartest.GDBStop(b, exe, "stop_here", map[int][]string{1: {"v0"}})
	_, th := stop.Open(b)
	st, err := vartest.Stack(th)
	if err != nil {
		b.Fatal(err)
	}
	f := st.Frame(1)
	r, err := f.Reader()
	if err != nil {
		b.Fatal(err)
	}
	read := func() int {
		scopes, err := r.ScopesAt(variables.LookupPC(f))
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, s := range scopes {
			for _, v := range s.Vars {
				if _, err := r.Read(v, f); err != nil {
					b.Fatalf("%s: %v", v.Name, err)
				}
				n++
			}
		}
		return n
	}
	if n := read(); n < 51 {
		b.Fatalf("%d variables in the frame", n)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		read()
	}
}
