package expr_test

import (
	"testing"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/internal/testprog"
)

// TestStdSubscriptAndStringCompare: libstdc++'s std::vector and
// std::string subscripted (v[2], s[1], names[1][0], through a reference)
// and a std::string compared with a string literal (==, !=, either side,
// short and heap-allocated strings, the empty string), as gdb's xmethods
// answer them. gdb -nx answers the same elements through the raw members
// (v._M_impl._M_start[2]). Found in a `sonde dap` trial on jsoncpp:
// `members[1]` failed ("cannot subscript") and the breakpoint condition
// `name == "nested"` was an error.
func TestStdSubscriptAndStringCompare(t *testing.T) {
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"ex_stdlib.cc"}, Flags: []string{"-O0"}, Name: "ex_stdlib"})
	raw := map[string]string{
		"v[2]":         "v._M_impl._M_start[2]",
		"v[0] + v[3]":  "v._M_impl._M_start[0] + v._M_impl._M_start[3]",
		"s[1]":         "s._M_dataplus._M_p[1]",
		"longer[39]":   "longer._M_dataplus._M_p[39]",
		"names[1][0]":  "names._M_impl._M_start[1]._M_dataplus._M_p[0]",
		"names[2][20]": "names._M_impl._M_start[2]._M_dataplus._M_p[20]",
		"ref[3]":       "ref._M_dataplus._M_p[3]",
		// std::shared_ptr and std::unique_ptr dereferenced as gdb's
		// xmethods do (yaml-cpp's `*m_pMemory` was "Cannot dereference").
		"sp->id":                       "sp._M_ptr->id",
		"(*sp).id":                     "(*sp._M_ptr).id",
		"up->id":                       "up->id", // gdb: its xmethod (the member path is ambiguous to gdb)
		"*si":                          "*si._M_ptr",
		"*si + up->id":                 "*si._M_ptr + (*up).id",
		"sp->label[1]":                 "sp._M_ptr->label._M_dataplus._M_p[1]",
		"(*up).label._M_string_length": "up->label._M_string_length",
	}
	env := intsMatchGDB(t, exe, "stop_here", raw)
	for src, want := range map[string]int64{
		`s == "hello"`: 1, `s != "hello"`: 0, `"hello" == s`: 1, `s == "hell"`: 0, `s == "hello!"`: 0,
		`empty == ""`: 1, `empty != ""`: 0, `names[1] == "beta"`: 1, `ref == "beta"`: 1,
		`names[2] == "a string longer than fifteen bytes"`: 1, `names[2] == "a string longer"`: 0,
		`s == "hello" && v[1] == 20`: 1,
	} {
		got, err := expr.Eval(src, env)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if n, err := got.Int(); err != nil || n != want {
			t.Errorf("%s = %d (%v), want %d", src, n, err, want)
		}
	}
	// What stays an error: a vector compared with a literal, a subscript
	// of a class that is neither.
	for _, src := range []string{`v == "x"`, `s < "x"`, `*v`, `v->x`} {
		if _, err := expr.Eval(src, env); err == nil {
			t.Errorf("%s: no error", src)
		}
	}
}
