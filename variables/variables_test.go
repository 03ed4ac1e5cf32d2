package variables_test

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/variables"
	"github.com/sondedbg/sonde/variables/vartest"
)

// builds are the compiler settings every comparison runs under.
var builds = []struct {
	name  string
	flags []string
}{
	{"O0-dwarf4", []string{"-O0", "-gdwarf-4"}},
	{"O0-dwarf5", []string{"-O0", "-gdwarf-5"}},
	{"O2-dwarf4", []string{"-O2", "-gdwarf-4"}},
	{"O2-dwarf5", []string{"-O2", "-gdwarf-5"}},
}

// findVar looks name up in the scopes at f's pc, innermost first.
func findVar(t *testing.T, r *variables.Reader, f variables.Frame, name string) *variables.Variable {
	t.Helper()
	scopes, err := r.ScopesAt(variables.LookupPC(f))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scopes {
		for _, v := range s.Vars {
			if v.Name == name {
				return v
			}
		}
	}
	return nil
}

// compareScalar checks one value sonde read against gdb's.
func compareScalar(t *testing.T, what string, got variables.Value, err error, want vartest.Result) {
	t.Helper()
	switch {
	case want.OptimizedOut:
		if !errors.Is(err, variables.ErrOptimizedOut) {
			t.Errorf("%s: gdb says optimized out, sonde: %v (err %v)", what, got.Bytes, err)
		}
	case want.Error != "":
		t.Logf("%s: gdb cannot evaluate it (%s); sonde: err %v", what, want.Error, err)
	case err != nil:
		t.Errorf("%s: gdb prints %s, sonde fails: %v", what, want.Value, err)
	case want.Int != nil:
		n, err := got.Int()
		if err != nil || n != *want.Int {
			t.Errorf("%s: sonde %d (%v), gdb %d (%s)", what, n, err, *want.Int, want.Value)
		}
	case want.Float != nil:
		x, err := got.Float()
		if err != nil || math.Abs(x-*want.Float) > 1e-9*math.Abs(*want.Float) {
			t.Errorf("%s: sonde %v (%v), gdb %v", what, x, err, *want.Float)
		}
	}
}

func TestLocalsAndParamsMatchGDB(t *testing.T) {
	frames := map[int][]string{
		0: {"n"},
		1: {"a", "b", "local", "d", "vla_n", "inner", "pp", "s"},
		2: {"argc", "p"},
		// libc, from its separate DWARF 5 debug file (libc6-dbg), when
		// installed.
		3: {"argc", "argv", "main", "result", "not_first_call"},
		4: {"argc", "argv", "stack_end", "init", "rtld_fini"},
	}
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			exe := testprog.Build(t, testprog.Spec{Sources: []string{"ex_vars.c"}, Flags: b.flags, Name: "ex_vars_" + b.name})
			stop := vartest.GDBStop(t, exe, "stop_here", frames)
			_, th := stop.Open(t)
			st, err := vartest.Stack(th)
			if err != nil {
				t.Fatal(err)
			}
			checked := 0
			for fi, names := range frames {
				f := st.Frame(fi)
				if f == nil {
					t.Fatalf("no frame %d", fi)
				}
				r, err := f.Reader()
				if err != nil {
					t.Fatal(err)
				}
				for _, name := range names {
					want := stop.Results[fi][name]
					v := findVar(t, r, f, name)
					if v == nil {
						if fi >= 3 && len(stop.Results[fi]) > 0 && want.Error != "" {
							continue // no libc debug information
						}
						if want.Error == "" {
							t.Errorf("frame %d: %s not found; gdb prints %s", fi, name, want.Value)
						}
						continue
					}
					got, err := r.Read(v, f)
					if want.Int == nil && want.Float == nil && !want.OptimizedOut {
						continue // aggregates are compared through expressions
					}
					compareScalar(t, b.name+": frame "+string(rune('0'+fi))+" "+name, got, err, want)
					checked++
				}
			}
			t.Logf("%d values compared with gdb", checked)
			if checked < 8 {
				t.Fatalf("only %d values compared", checked)
			}
		})
	}
}

func TestGlobalsAndTypes(t *testing.T) {
	for _, b := range builds[:2] {
		t.Run(b.name, func(t *testing.T) {
			exe := testprog.Build(t, testprog.Spec{Sources: []string{"ex_vars.c"}, Flags: b.flags, Name: "ex_vars_" + b.name})
			globals := []string{"g_int", "g_double", "s_counter", "g_color", "g_uc", "g_short", "g_float", "g_big", "g_str", "g_null"}
			stop := vartest.GDBStop(t, exe, "stop_here", map[int][]string{0: globals})
			_, th := stop.Open(t)
			st, err := vartest.Stack(th)
			if err != nil {
				t.Fatal(err)
			}
			f := st.Frame(0)
			r, _ := f.Reader()
			for _, name := range globals {
				vs, err := r.Globals(name)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				got, err := r.Read(vs[0], f)
				compareScalar(t, name, got, err, stop.Results[0][name])
			}
			// Types: spelled as C spells them, sizes as gdb's sizeof.
			for name, want := range map[string]string{
				"g_arr": "int [3][4]", "g_pt": "struct point", "g_str": "const char *",
				"g_fp": "int (*)(int)", "g_n1": "struct node", "g_color": "enum color",
			} {
				vs, err := r.Globals(name)
				if err != nil {
					t.Fatal(err)
				}
				if s := vs[0].Type.String(); s != want {
					t.Errorf("type of %s: %q, want %q", name, s, want)
				}
			}
			vs, _ := r.Globals("g_n1")
			node := vs[0].Type.Strip()
			if len(node.Fields) != 2 || node.Fields[1].Type.Elem != node {
				t.Errorf("struct node is not self-referential: %+v", node.Fields)
			}
			vs, _ = r.Globals("g_bits")
			bits := vs[0].Type.Strip()
			wantBits := [][2]int64{{0, 3}, {3, 5}, {8, 12}}
			for i, w := range wantBits {
				if f := bits.Fields[i]; f.BitOffset != w[0] || f.BitSize != w[1] {
					t.Errorf("bit field %s: offset %d size %d, want %v", f.Name, f.BitOffset, f.BitSize, w)
				}
			}
			if ts, err := r.TypesByName("point_t"); err != nil || ts[0].Strip().Name != "point" || ts[0].ByteSize() != 8 {
				t.Errorf("typedef point_t: %v %v", ts, err)
			}
		})
	}
}

// TestConcurrentReads reads every variable of every frame from several
// goroutines at once through one shared Reader (run with -race).
func TestConcurrentReads(t *testing.T) {
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"ex_vars.c"}, Flags: []string{"-O2", "-gdwarf-5"}, Name: "ex_vars_O2-dwarf5"})
	stop := vartest.GDBStop(t, exe, "stop_here", map[int][]string{0: {"n"}})
	_, th := stop.Open(t)
	st, err := vartest.Stack(th)
	if err != nil {
		t.Fatal(err)
	}
	// Fresh Reader: the goroutines race to decode, not just to read caches.
	b, err := st.Frame(0).Binary()
	if err != nil {
		t.Fatal(err)
	}
	r, err := variables.New(b)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan int)
	for g := 0; g < 4; g++ {
		go func() {
			n := 0
			for i := 0; i < st.Len(); i++ {
				f := st.Frame(i)
				scopes, _ := r.ScopesAt(variables.LookupPC(f))
				for _, s := range scopes {
					for _, v := range s.Vars {
						r.Read(v, f)
						_ = v.Type.String()
						n++
					}
				}
			}
			for _, name := range []string{"g_n1", "g_outer", "g_bits", "t_counter"} {
				if vs, err := r.Globals(name); err == nil {
					r.Read(vs[0], st.Frame(0))
					n++
				}
			}
			done <- n
		}()
	}
	first := <-done
	for g := 1; g < 4; g++ {
		if n := <-done; n != first || n < 10 {
			t.Errorf("goroutines saw %d and %d variables", first, n)
		}
	}
}

// TestSplitDWARF reads locals, globals and types of a -gsplit-dwarf build:
// the binary has skeleton units only, the DIEs are in .dwo files.
func TestSplitDWARF(t *testing.T) {
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"ex_vars.c"}, Flags: []string{"-O2", "-gdwarf-5", "-gsplit-dwarf"}, Name: "ex_vars_split"})
	frames := map[int][]string{0: {"n"}, 1: {"a", "b", "local", "d", "vla_n", "inner", "pp", "s"}, 2: {"argc"}}
	// The .dwo was moved next to the binary; gdb only looks where
	// DW_AT_dwo_name says (the deleted build directory): put it back for
	// gdb's run only. sonde finds it next to the binary.
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	dw, err := ef.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	cu, err := dw.Reader().Next()
	if err != nil {
		t.Fatal(err)
	}
	dwoName, _ := cu.Val(dwarf.AttrDwoName).(string)
	ef.Close()
	if !filepath.IsAbs(dwoName) {
		t.Fatalf("DW_AT_dwo_name %q", dwoName)
	}
	if err := os.MkdirAll(filepath.Dir(dwoName), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(filepath.Dir(exe), filepath.Base(dwoName)), dwoName); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	stop := vartest.GDBStop(t, exe, "stop_here", frames)
	os.RemoveAll(filepath.Dir(dwoName))
	_, th := stop.Open(t)
	t.Run("dwo", func(t *testing.T) { checkSplit(t, th, stop, frames) })
}

// checkSplit compares the split build's variables with gdb's.
func checkSplit(t *testing.T, th *target.Context, stop *vartest.Stop, frames map[int][]string) {
	st, err := vartest.Stack(th)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for fi, names := range frames {
		f := st.Frame(fi)
		r, err := f.Reader()
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			want := stop.Results[fi][name]
			v := findVar(t, r, f, name)
			if v == nil {
				t.Errorf("frame %d: no %s in the split unit", fi, name)
				continue
			}
			got, err := r.Read(v, f)
			compareScalar(t, "split: frame "+string(rune('0'+fi))+" "+name, got, err, want)
			checked++
		}
	}
	r, _ := st.Frame(0).Reader()
	for _, name := range []string{"g_int", "g_short", "g_color"} { // (s_counter is optimized out at -O2, gdb agrees)
		vs, err := r.Globals(name)
		if err != nil {
			t.Errorf("global %s: %v", name, err)
			continue
		}
		val, err := r.Read(vs[0], st.Frame(0))
		n, _ := val.Int()
		if err != nil || n == 0 {
			t.Errorf("global %s = %d (%v)", name, n, err)
		}
		// Its type can be fetched again by the offset it carries.
		if again, err := r.Type(vs[0].Type.Offset); err != nil || again != vs[0].Type {
			t.Errorf("type of %s by offset %#x: %v %v", name, vs[0].Type.Offset, again, err)
		}
	}
	if ts, err := r.TypesByName("point_t"); err != nil || ts[0].ByteSize() != 8 {
		t.Errorf("point_t: %v %v", ts, err)
	}
	if checked < 10 {
		t.Fatalf("%d values compared", checked)
	}
}
