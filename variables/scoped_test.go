package variables_test

import (
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/variables"
	"github.com/sondedbg/sonde/variables/vartest"
)

// scopedEnums are pp_scoped's enums: at file scope, scoped, in namespaces
// (an anonymous one too), in a class, a class template and a nested class,
// flag enums.
var scopedEnums = []string{"t", "p", "m", "f", "an", "pl", "d", "bx", "fl", "nf"}

// scopedPretty are pp_scoped's std::variant and std::bitset values, printed
// by gdb with libstdc++'s printers.
var scopedPretty = []string{"v1", "v0", "vp", "vv", "bs", "big", "none"}

// TestScopedEnumeratorsMatchGDB prints enumerators of enums declared in
// classes and namespaces and compares them with gdb's print at the same
// stop (Plan::kWantToStart, geo::Mode::On, geo::(anonymous
// namespace)::N1), without building the reader's name index; and
// std::variant and std::bitset as libstdc++'s printers show them.
func TestScopedEnumeratorsMatchGDB(t *testing.T) {
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"pp_scoped.cc"}, Flags: []string{"-O0", "-std=c++17"}, Name: "pp_scoped"})
	stop := vartest.GDBStop(t, exe, "stop_here", map[int][]string{1: append(scopedEnums, scopedPretty...)})
	f, r := stop.Frame(t, 1)
	for _, name := range scopedEnums {
		v := findVar(t, r, f, name)
		if v == nil {
			t.Fatalf("%s: not found", name)
		}
		val, err := r.Read(v, f)
		if got, want := r.Format(val, err, f, variables.FormatOptions{}), stop.Results[1][name].Value; got != want {
			t.Errorf("%s:\nsonde %s\ngdb   %s", name, got, want)
		}
	}
	if r.NamesIndexed() {
		t.Error("qualifying enumerators built the name index")
	}
	if stop.Results[1]["bs"].Value == "" || stop.Results[1]["bs"].Value[0] == '{' {
		t.Skipf("gdb has no libstdc++ printers (bs = %q)", stop.Results[1]["bs"].Value)
	}
	for _, name := range scopedPretty {
		v := findVar(t, r, f, name)
		if v == nil {
			t.Fatalf("%s: not found", name)
		}
		val, err := r.Read(v, f)
		if got, want := r.Format(val, err, f, variables.FormatOptions{Pretty: true}), stop.Results[1][name].Value; got != want {
			t.Errorf("%s:\nsonde %s\ngdb   %s", name, got, want)
		}
	}
}
