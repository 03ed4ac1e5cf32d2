package expr_test

import (
	"testing"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/variables/vartest"
)

// split4Exprs are evaluated at the stop in split4_vars.c's stop_here.
var split4Exprs = map[int][]string{
	0: {"n", "g_count"},
	1: {"a", "b", "p.x", "p.y", "p", "local", "frac", "scaled[1]", "scaled[2] - scaled[0]", "sh->area",
		"sh->corner[1].y", "sh->name[1]", "*sh", "sh->kind", "sh->flags", "sizeof(*sh)", "g_count + b",
		"g_long", "g_ratio * 2", "g_mood", "g_mood == BUSY", "g_origin.y", "g_shape.corner[0].x",
		"g_shape.kind", "g_table[3]", "&g_table[4] - &g_table[1]", "*g_label", "g_label[5]", "s_hidden",
		"(char)g_count", "a * b"},
	2: {"depth", "pt->x", "pt->y", "acc", "moved.x", "moved.y", "r", "*pt"},
	3: {"argc", "start.x", "start.y", "total", "s_hidden - argc"},
}

// TestSplitDWARF4MatchesGDB evaluates expressions over a GNU split DWARF 4
// build (-gsplit-dwarf -gdwarf-4: GNU forms, .debug_loc.dwo lists,
// DW_OP_GNU_addr_index and DW_OP_GNU_const_index) at -O0 and -O2, and the
// same program unsplit, against gdb: the split build must read the same.
func TestSplitDWARF4MatchesGDB(t *testing.T) {
	for _, b := range []struct {
		name  string
		flags []string
	}{
		{"O0-split4", []string{"-O0", "-gdwarf-4", "-gsplit-dwarf"}},
		{"O2-split4", []string{"-O2", "-gdwarf-4", "-gsplit-dwarf"}},
		{"O0-dwarf4", []string{"-O0", "-gdwarf-4"}},
		{"O2-dwarf4", []string{"-O2", "-gdwarf-4"}},
	} {
		t.Run(b.name, func(t *testing.T) {
			exe := testprog.Build(t, testprog.Spec{Sources: []string{"split4_vars.c"}, Flags: b.flags, Name: "split4_" + b.name})
			vartest.LinkDWO(t, exe)
			stop := vartest.GDBStop(t, exe, "stop_here", split4Exprs)
			_, th := stop.Open(t)
			st, err := vartest.Stack(th)
			if err != nil {
				t.Fatal(err)
			}
			compared, aggregates := 0, 0
			for fi, list := range split4Exprs {
				env := envFor(t, st, fi)
				for _, src := range list {
					want := stop.Results[fi][src]
					got, err := expr.Eval(src, env)
					if err == nil && got.LoadErr != nil {
						err = got.LoadErr
					}
					what := b.name + " frame " + string(rune('0'+fi)) + ": " + src
					scalar, aggregate := checkAgainstGDB(t, what, want, got, err)
					if scalar {
						compared++
					}
					if aggregate {
						aggregates++
					}
				}
			}
			// The thread-local t_split (606 + argc) is checked against the
			// program, not gdb: gdb 13 reads split DWARF's TLS offsets from
			// .debug_addr as they are (PT_TLS addresses, see
			// tls.Segment.Offset) and prints 0.
			for _, fi := range []int{0, 1} {
				tv, err := expr.Eval("t_split + 1", envFor(t, st, fi))
				if n, _ := tv.Int(); err != nil || n != 608 {
					t.Errorf("frame %d: t_split + 1 = %d (%v), want 608", fi, n, err)
				}
			}
			t.Logf("%d scalars and %d aggregates compared", compared, aggregates)
			if compared < 35 {
				t.Fatalf("only %d values compared", compared)
			}
		})
	}
}
