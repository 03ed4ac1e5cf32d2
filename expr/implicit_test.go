package expr_test

import (
	"testing"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/variables/vartest"
)

// TestImplicitPointers: at -O2 gcc describes pointers to register-resident
// locals with DW_OP_implicit_pointer; the pointer has no value (gdb:
// <synthetic pointer>) but dereferencing it gives the target's value.
func TestImplicitPointers(t *testing.T) {
	for _, flags := range [][]string{{"-O2", "-gdwarf-5"}, {"-O2", "-gdwarf-4"}} {
		exprs := map[int][]string{1: {"*p", "q->b", "(*q).a", "p[0]"}} // (gdb 13 crashes on *q and q->a + *p)
		exe := testprog.Build(t, testprog.Spec{Sources: []string{"ex_inline.c"}, Flags: flags, Name: "ex_inline_ip"})
		stop := vartest.GDBStop(t, exe, "leaf2", exprs)
		_, th := stop.Open(t)
		st, err := vartest.Stack(th)
		if err != nil {
			t.Fatal(err)
		}
		env := envFor(t, st, 1) // frame 1 is get, inlined into pointers
		compared := 0
		for _, src := range exprs[1] {
			want := stop.Results[1][src]
			got, err := expr.Eval(src, env)
			if err == nil {
				err = got.LoadErr
			}
			switch {
			case want.Int != nil:
				n, err2 := got.Int()
				if err != nil || err2 != nil || n != *want.Int {
					t.Errorf("%v %s: sonde %d (%v %v), gdb %s", flags, src, n, err, err2, want.Value)
				}
				compared++
			case want.Error == "" && want.Value != "":
				if err != nil {
					t.Errorf("%v %s: gdb %s, sonde %v", flags, src, want.Value, err)
				}
			}
		}
		if compared < 4 { // all four
			t.Fatalf("%v: %d values compared (gdb: %v)", flags, compared, stop.Results[1])
		}
		// What gdb 13 cannot print: sums through both pointers, the struct.
		if r, err := expr.Eval("q->a + *p", env); err != nil || r.Value == nil || r.Value[0] != 6 {
			t.Errorf("%v: q->a + *p: %v %v, want 6", flags, r, err)
		}
		if r, err := expr.Eval("*q", env); err != nil || len(r.Value) != 8 || r.Value[0] != 2 || r.Value[4] != 7 {
			t.Errorf("%v: *q: %v %v, want {2, 7}", flags, r, err)
		}
		// The pointer itself has no value.
		if r, err := expr.Eval("p", env); err != nil || r.LoadErr == nil {
			t.Errorf("%v: p: %v %v, want a synthetic pointer without value", flags, r, err)
		}
	}
}
