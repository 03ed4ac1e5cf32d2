package expr_test

import (
	"errors"
	"math"
	"testing"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/variables"
	"github.com/sondedbg/sonde/variables/vartest"
)

var builds = []struct {
	name  string
	flags []string
}{
	{"O0-dwarf4", []string{"-O0", "-gdwarf-4"}},
	{"O0-dwarf5", []string{"-O0", "-gdwarf-5"}},
	{"O2-dwarf4", []string{"-O2", "-gdwarf-4"}},
	{"O2-dwarf5", []string{"-O2", "-gdwarf-5"}},
}

// Expressions compared with gdb, per frame of the stop in stop_here.
var frameExprs = map[int][]string{
	0: {"n", "n * 2 + 1", "$rsp == $sp", "$pc == $rip", "g_int", "(long)$eax == ($rax & 0xffffffff)"},
	1: {
		"a + 1", "local * 3 - inner", "b / 3", "b % 7", "-b / 3", "d * 2", "d / 3", "(int)d", "(char)300",
		"g_arr[2][3]", "g_arr[1][0] + g_arr[0][1]", "*g_arr[2]", "&g_arr[1][2] - &g_arr[0][0]",
		"sizeof g_arr", "sizeof(struct outer)", "sizeof(point_t)", "sizeof(int[3][5])", "sizeof g_arr[0]",
		"g_pt.x", "pp->y", "(*pp).x", "pp[0].y", "g_n1.next->value", "g_n1.next->next == 0", "g_n1.next->next",
		"g_bits.a", "g_bits.b", "g_bits.c", "g_bits.d", "g_bits.b * 2",
		"g_color", "g_color == BLUE", "GREEN + 1", "g_u.b[3]", "g_u.i", "g_outer.pts[1].y", "g_outer.w.i",
		"g_outer.avg * 2", "g_outer.tag", "g_str[1]", "*g_str", "*s", "s[2]", "vla[3]", "vla[vla_n-1]",
		"sizeof(vla)", "sizeof vla / sizeof vla[0]", "buf[0]", "buf[1]", "p.y", "p.x * pp->x",
		"g_uc + 1", "g_short * 2", "g_big >> 60", "g_big", "-g_uc", "~g_int", "g_int > 40 && g_double < 4",
		"g_int ? 1.5 : 2", "'a' + 1", "'\\n'", "\"xyz\"[1]", "10 / 3", "-7 / 2", "-7 % 3", "7u - 8", "3.5f * 2",
		"1e3 + 0.5", "(unsigned char)-1", "(short)70000", "g_float", "g_float / 4", "(long)&g_pt == (long)pp",
		"g_fp == stop_here", "(unsigned long)g_null", "0x10 | 0x3", "1 ? g_pt.x : g_pt.y", "(g_int, 5)",
		"g_double > 3.2", "!g_null", "&g_outer.pts[1] == &g_outer.pts[0] + 1", "*&g_int", "(point_t *)pp == pp",
		"((struct point *)&g_arr)->y", "s_counter * -1", "0x7fffffff + 1u", "sizeof(long double)",
		"t_counter", "t_other * t_counter", "&t_other != 0",
		"g_ld", "g_ld * 2 + 0.5", "(double)g_ld", "(long double)3 / 4", "g_flag", "g_flag + 1", "(_Bool)7",
	},
	2: {"p.x + p.y", "argc", "r"},
}

func envFor(t *testing.T, st *session.Stack, i int) *expr.Env {
	f := st.Frame(i)
	r, err := f.Reader()
	if err != nil {
		t.Fatal(err)
	}
	chain, err := r.ScopesAt(variables.LookupPC(f))
	if err != nil {
		t.Fatal(err)
	}
	return &expr.Env{Frame: f, Reader: r, Scopes: variables.FrameScopes(chain, 0), Function: f.FunctionAddress}
}

// intsMatchGDB stops exe at fn under gdb and under sonde and checks that
// each expression (a key of exprs) evaluates in fn's caller (frame 1) to
// the integer gdb gives for its counterpart (the value); it returns the
// caller's environment for further checks.
func intsMatchGDB(t *testing.T, exe, fn string, exprs map[string]string) *expr.Env {
	t.Helper()
	var gdbExprs []string
	for _, g := range exprs {
		gdbExprs = append(gdbExprs, g)
	}
	stop := vartest.GDBStop(t, exe, fn, map[int][]string{1: gdbExprs})
	_, th := stop.Open(t)
	st, err := vartest.Stack(th)
	if err != nil {
		t.Fatal(err)
	}
	env := envFor(t, st, 1)
	for src, g := range exprs {
		want := stop.Results[1][g]
		if want.Int == nil {
			t.Fatalf("gdb: %s: %+v", g, want)
		}
		got, err := expr.Eval(src, env)
		if err != nil {
			t.Errorf("%s: %v (gdb's %s is %s)", src, err, g, want.Value)
			continue
		}
		if n, err := got.Int(); err != nil || n != *want.Int {
			t.Errorf("%s = %d (%v), gdb's %s is %s", src, n, err, g, want.Value)
		}
	}
	return env
}

func TestExpressionsMatchGDB(t *testing.T) {
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			exe := testprog.Build(t, testprog.Spec{Sources: []string{"ex_vars.c"}, Flags: b.flags, Name: "ex_vars_" + b.name})
			stop := vartest.GDBStop(t, exe, "stop_here", frameExprs)
			_, th := stop.Open(t)
			st, err := vartest.Stack(th)
			if err != nil {
				t.Fatal(err)
			}
			compared := 0
			for fi, list := range frameExprs {
				env := envFor(t, st, fi)
				for _, src := range list {
					want := stop.Results[fi][src]
					got, err := expr.Eval(src, env)
					if err == nil && got.LoadErr != nil {
						err = got.LoadErr
					}
					what := b.name + " frame " + string(rune('0'+fi)) + ": " + src
					if scalar, _ := checkAgainstGDB(t, what, want, got, err); scalar {
						compared++
					}
				}
			}
			if compared < 60 {
				t.Fatalf("only %d values compared", compared)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"ex_vars.c"}, Flags: []string{"-O0"}, Name: "ex_vars_O0"})
	stop := vartest.GDBStop(t, exe, "stop_here", map[int][]string{0: {"n"}})
	_, th := stop.Open(t)
	st, err := vartest.Stack(th)
	if err != nil {
		t.Fatal(err)
	}
	env := envFor(t, st, 1)
	for src, want := range map[string]struct {
		kind expr.ErrorKind
		code int
		pos  int
	}{
		"a +":                       {expr.ErrSyntax, 18, 3},
		"no_such_thing":             {expr.ErrNotFound, 22, 0},
		"g_pt.zz":                   {expr.ErrNotFound, 22, 4},
		"*g_null":                   {expr.ErrMemory, 17, 0},
		"g_null->value":             {expr.ErrType, 24, 6}, // int* has no members
		"g_n1.next->next->value":    {expr.ErrMemory, 17, 15},
		"a / 0":                     {expr.ErrDivideByZero, 18, 2},
		"a % (local - local)":       {expr.ErrDivideByZero, 18, 2},
		"g_pt + 1":                  {expr.ErrType, 24, 5},
		"stop_here(1)":              {expr.ErrUnsupported, 23, 9},
		"a++":                       {expr.ErrUnsupported, 23, 1},
		"(struct nosuch *)0":        {expr.ErrNotFound, 22, 1},
		"1 << 99":                   {expr.ErrType, 24, 2},
		"$nosuchreg":                {expr.ErrNotFound, 22, 0},
		"a = 1":                     {expr.ErrUnsupported, 23, 2}, // a core is read-only
		"'ab":                       {expr.ErrSyntax, 18, 0},
		"0x":                        {expr.ErrSyntax, 18, 0},
		"99999999999999999999":      {expr.ErrSyntax, 18, 0},
		"&(a + 1)":                  {expr.ErrType, 24, 0},
		"*a":                        {expr.ErrType, 24, 0},
		"(void *)g_str + (void *)0": {expr.ErrType, 24, 14},
	} {
		r, err := expr.Eval(src, env)
		if err == nil {
			err = r.LoadErr
		}
		var e *expr.Error
		if !errors.As(err, &e) {
			t.Errorf("%q: error %v, want an *expr.Error", src, err)
			continue
		}
		if e.Kind != want.kind || e.TCFCode() != want.code || e.Pos != want.pos {
			t.Errorf("%q: kind %v code %d pos %d (%v), want kind %v code %d pos %d", src, e.Kind, e.TCFCode(), e.Pos, e, want.kind, want.code, want.pos)
		}
	}
	// C's commutative subscript, which gdb does not do.
	if r, err := expr.Eval("2[g_arr][1]", env); err != nil || r.Value[0] != 21 {
		t.Errorf("2[g_arr][1]: %v %v", r, err)
	}
	// A huge array is located but not loaded; indexing it still works.
	huge, err := expr.Eval("g_huge", env)
	if err != nil || huge.LoadErr == nil || !huge.HasAddress || huge.Value != nil {
		t.Errorf("g_huge: %v, value %d bytes, load error %v", err, len(huge.Value), huge.LoadErr)
	}
	last, err := expr.Eval("g_huge[sizeof g_huge - 1]", env)
	if err != nil || len(last.Value) != 1 || last.Value[0] != 7 {
		t.Errorf("g_huge[last]: %v %v", last, err)
	}
}

// checkAgainstGDB compares sonde's evaluation of one expression (got, err)
// with gdb's answer. scalar says a number was compared; aggregate says a
// struct or array was checked for its bytes (its members are compared on
// their own).
func checkAgainstGDB(t *testing.T, what string, want vartest.Result, got *expr.Result, err error) (scalar, aggregate bool) {
	t.Helper()
	switch {
	case want.OptimizedOut:
		var ee *expr.Error
		if !errors.As(err, &ee) || ee.Kind != expr.ErrOptimizedOut {
			t.Errorf("%s: gdb says optimized out; sonde: %v", what, err)
		}
	case want.Error != "":
		if err == nil {
			t.Errorf("%s: gdb fails (%s), sonde gives %x", what, want.Error, got.Value)
		}
	case err != nil:
		t.Errorf("%s: gdb prints %s, sonde fails: %v", what, want.Value, err)
	case want.Int != nil:
		n, err := got.Int()
		if err != nil || n != *want.Int && uint64(n) != *want.Uint {
			t.Errorf("%s: sonde %d (%v), gdb %d (%s)", what, n, err, *want.Int, want.Value)
		}
		return true, false
	case want.Float != nil:
		x, err := got.Float()
		if err != nil || math.Abs(x-*want.Float) > 1e-12*math.Abs(*want.Float) {
			t.Errorf("%s: sonde %v (%v), gdb %v", what, x, err, *want.Float)
		}
		return true, false
	default:
		if len(got.Value) == 0 {
			t.Errorf("%s: gdb prints %s, sonde has no bytes", what, want.Value)
		}
		return false, true
	}
	return false, false
}
