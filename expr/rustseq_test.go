package expr_test

import (
	"testing"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/internal/testprog"
)

// TestRustSliceAndVecSubscript: a Rust slice (&[i32], &[char], &[Item])
// and a Vec subscripted in a watch, and a member of the element, as gdb's
// Rust mode subscripts the slices (a Vec's elements are compared with the
// slice over them: gdb does not subscript a Vec). Found in a
// `sonde dap` trial on Debian's strsim crate: `a_elems[1]` in
// generic_damerau_levenshtein was "Cannot subscript struct &[char]".
func TestRustSliceAndVecSubscript(t *testing.T) {
	exe := testprog.BuildRust(t, "ex_rustseq.rs", "ex_rustseq", "-C", "opt-level=0")
	same := map[string]string{
		"sl[0]":           "sl[0]",
		"sl[2]":           "sl[2]",
		"cs[1]":           "cs[1]",
		"cs[5]":           "cs[5]",
		"ns[49]":          "ns[49]",
		"is[1].id":        "is[1].id",
		"is[0].weight":    "is[0].weight",
		"chars[3]":        "cs[3]",
		"nums[0]":         "ns[0]",
		"nums[31]":        "ns[31]",
		"items[1].id":     "is[1].id",
		"items[1].weight": "is[1].weight",
	}
	env := intsMatchGDB(t, exe, "ex_rustseq::stop_here", same)
	// Out of bounds, as Rust checks: an error, not the memory after.
	for _, src := range []string{"sl[3]", "nums[50]", "cs[-1]", "items[2].id"} {
		if r, err := expr.Eval(src, env); err == nil {
			t.Errorf("%s: no error (%+v)", src, r)
		}
	}
}
