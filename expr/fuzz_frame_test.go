package expr_test

import (
	"strings"
	"testing"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/variables"
	"github.com/sondedbg/sonde/variables/vartest"
)

// FuzzEvalInFrame evaluates arbitrary expressions in a real frame (ex_vars
// stopped in stop_here, frame 1, on a core): every path through real types
// and memory must end in a value or an error, never an internal error (a
// recovered panic).
func FuzzEvalInFrame(f *testing.F) {
	exe := testprog.Build(f, testprog.Spec{Sources: []string{"ex_vars.c"}, Flags: []string{"-O2", "-gdwarf-5"}, Name: "ex_vars_O2-dwarf5"})
	stop := vartest.GDBStop(f, exe, "stop_here", map[int][]string{0: {"n"}})
	_, th := stop.Open(f)
	st, err := vartest.Stack(th)
	if err != nil {
		f.Fatal(err)
	}
	fr := st.Frame(1)
	r, err := fr.Reader()
	if err != nil {
		f.Fatal(err)
	}
	for _, src := range frameExprs[1] {
		f.Add(src)
	}
	f.Add("g_bits.b = g_huge[100000]")
	f.Add("*(struct node *)g_n1.next")
	f.Add("((struct outer *)0)->pts[1]")
	f.Fuzz(func(t *testing.T, src string) {
		env := &expr.Env{Frame: readOnly{fr}, Reader: r, Function: fr.FunctionAddress}
		if scopes, err := r.ScopesAt(variables.LookupPC(fr)); err == nil {
			env.Scopes = scopes
		}
		res, err := expr.Eval(src, env)
		if err != nil && strings.Contains(err.Error(), "internal error") {
			t.Fatalf("%q: %v", src, err)
		}
		if err == nil && res.Value != nil && res.Type.ByteSize() >= 0 && res.BitSize == 0 && int64(len(res.Value)) != res.Type.ByteSize() {
			t.Fatalf("%q: %d bytes for %s", src, len(res.Value), res.Type)
		}
	})
}

// readOnly shows only the frame's variables.Frame methods: no writes.
type readOnly struct{ variables.Frame }
