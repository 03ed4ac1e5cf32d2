package expr_test

import (
	"errors"
	"math"
	"testing"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/variables/vartest"
)

var cxxExprs = map[int][]string{
	// In geo::Derived::probe: members by their names (this->...), a base's
	// member, a parameter, a static member and a variable of the enclosing
	// namespace, each by its bare name.
	1: {"id", "weight", "where.y", "where.x + n", "this->id", "(*this).weight * 2", "n", "instances", "counter"},
	2: {
		"d.id", "d.weight", "d.where.y", "p.x", "r.y", "b->items[2]", "b->used", "total", "geo::counter",
		"g_derived.id", "g_derived.where.x + p.y", "g_multi.x", "g_multi.y", "g_multi.id", "g_multi.extra",
		"(int)g_mode", "g_buf.items[3]", "sizeof(g_buf)", "sizeof(geo::Derived)", "sizeof(Multi)",
		"d.weight * p.x", "&d == &g_derived", "&r != &p", "geo::Base::instances", "b->items[0] + b->items[1]",
		"((geo::Point *)&g_multi)->y", "(long)&g_multi.extra - (long)&g_multi",
		"g_diamond.vb", "g_diamond.l + g_diamond.r * 10 + g_diamond.d * 100", "(long)&g_diamond.vb - (long)&g_diamond",
	},
	0: {"n", "n - 1"},
}

// TestCxxExpressionsMatchGDB compares C++ values with gdb, including a DWARF
// 5 build whose types live in type units (DW_FORM_ref_sig8).
func TestCxxExpressionsMatchGDB(t *testing.T) {
	cxxBuilds := append(builds[:len(builds):len(builds)], struct {
		name  string
		flags []string
	}{"O0-dwarf5-typeunits", []string{"-O0", "-gdwarf-5", "-fdebug-types-section"}},
		struct {
			name  string
			flags []string
		}{"O2-dwarf4-typeunits", []string{"-O2", "-gdwarf-4", "-fdebug-types-section"}},
		// GNU split DWARF 4: the C++ DIEs in a .dwo with GNU forms.
		struct {
			name  string
			flags []string
		}{"O0-split4", []string{"-O0", "-gdwarf-4", "-gsplit-dwarf"}},
		struct {
			name  string
			flags []string
		}{"O2-split4", []string{"-O2", "-gdwarf-4", "-gsplit-dwarf"}},
		struct {
			name  string
			flags []string
		}{"O0-split4-typeunits", []string{"-O0", "-gdwarf-4", "-gsplit-dwarf", "-fdebug-types-section"}})
	for _, b := range cxxBuilds {
		t.Run(b.name, func(t *testing.T) {
			exe := testprog.Build(t, testprog.Spec{Sources: []string{"ex_cxx.cc"}, Flags: b.flags, Name: "ex_cxx_" + b.name})
			vartest.LinkDWO(t, exe)
			stop := vartest.GDBStop(t, exe, "stop_here", cxxExprs)
			_, th := stop.Open(t)
			st, err := vartest.Stack(th)
			if err != nil {
				t.Fatal(err)
			}
			compared := 0
			for fi, list := range cxxExprs {
				env := envFor(t, st, fi)
				for _, src := range list {
					want := stop.Results[fi][src]
					got, err := expr.Eval(src, env)
					if err == nil && got.LoadErr != nil {
						err = got.LoadErr
					}
					switch {
					case want.OptimizedOut:
						var ee *expr.Error
						if !errors.As(err, &ee) || ee.Kind != expr.ErrOptimizedOut {
							t.Errorf("%s: gdb says optimized out; sonde: %v", src, err)
						}
					case want.Error != "":
						t.Logf("%s: gdb fails (%s); sonde: %v", src, want.Error, err)
					case err != nil:
						t.Errorf("%s: gdb prints %s, sonde fails: %v", src, want.Value, err)
					case want.Int != nil:
						if n, err := got.Int(); err != nil || n != *want.Int && uint64(n) != *want.Uint {
							t.Errorf("%s: sonde %d (%v), gdb %s", src, n, err, want.Value)
						}
						compared++
					case want.Float != nil:
						if x, err := got.Float(); err != nil || math.Abs(x-*want.Float) > 1e-12 {
							t.Errorf("%s: sonde %v (%v), gdb %v", src, x, err, *want.Float)
						}
						compared++
					}
				}
			}
			if compared < 20 {
				t.Fatalf("only %d values compared", compared)
			}
		})
	}
}
