package variables_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/variables"
	"github.com/sondedbg/sonde/variables/vartest"
)

// TestSplitDWARF4 reads the parameters, locals and globals of a GNU split
// DWARF 4 build (-gsplit-dwarf -gdwarf-4) and compares them with gdb at
// -O0 and -O2; at -O2 some of them must come from .debug_loc.dwo lists.
func TestSplitDWARF4(t *testing.T) {
	for _, opt := range []string{"-O0", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			exe := testprog.Build(t, testprog.Spec{Sources: []string{"split4_vars.c"},
				Flags: []string{opt, "-gdwarf-4", "-gsplit-dwarf"}, Name: "split4_" + opt[1:] + "-split4"})
			vartest.LinkDWO(t, exe)
			checkSplit4(t, exe, opt == "-O2")
		})
	}
}

// TestSplitDWARF4Package: the same from a DWARF 4 package (.dwp, index
// version 2, made by binutils' dwp) next to the binary, with no .dwo left.
func TestSplitDWARF4Package(t *testing.T) {
	dwp, err := exec.LookPath("dwp")
	if err != nil {
		t.Skip("binutils' dwp is needed to make a package")
	}
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"split4_vars.c"},
		Flags: []string{"-O2", "-gdwarf-4", "-gsplit-dwarf"}, Name: "split4_O2-split4"})
	unlink := vartest.LinkDWO(t, exe)
	dir := t.TempDir()
	pkg := filepath.Join(dir, "split4_pkg")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pkg, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(dwp, "-e", pkg, "-o", pkg+".dwp").CombinedOutput(); err != nil {
		t.Fatalf("dwp: %v\n%s", err, msg)
	}
	unlink() // from here on only the package has the DWARF
	checkSplit4(t, pkg, true)
}

// checkSplit4 compares split4_vars' variables in exe with gdb's.
func checkSplit4(t *testing.T, exe string, optimized bool) {
	frames := map[int][]string{
		0: {"n"},
		1: {"a", "b", "local", "frac", "sh"},
		2: {"depth", "pt", "acc", "r"},
		3: {"argc", "argv", "total"},
	}
	globals := []string{"g_count", "g_long", "g_ratio", "g_mood", "g_label", "s_hidden"}
	want := map[int][]string{0: append(append([]string(nil), frames[0]...), globals...)}
	for fi, names := range frames {
		if fi != 0 {
			want[fi] = names
		}
	}
	stop := vartest.GDBStop(t, exe, "stop_here", want)
	_, th := stop.Open(t)
	st, err := vartest.Stack(th)
	if err != nil {
		t.Fatal(err)
	}
	checked, lists := 0, 0
	for fi, names := range frames {
		f := st.Frame(fi)
		r, err := f.Reader()
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			v := findVar(t, r, f, name)
			if v == nil {
				t.Errorf("frame %d: no %s in the split unit", fi, name)
				continue
			}
			if v.Loc.Kind == variables.LocList {
				lists++
				if v.Loc.Err != nil {
					t.Errorf("frame %d: %s: location list: %v", fi, name, v.Loc.Err)
				}
			}
			got, err := r.Read(v, f)
			compareScalar(t, "frame "+string(rune('0'+fi))+" "+name, got, err, stop.Results[fi][name])
			checked++
		}
	}
	r, _ := st.Frame(0).Reader()
	for _, name := range globals {
		vs, err := r.Globals(name)
		if err != nil {
			t.Errorf("global %s: %v", name, err)
			continue
		}
		got, err := r.Read(vs[0], st.Frame(0))
		compareScalar(t, "global "+name, got, err, stop.Results[0][name])
		checked++
	}
	// The thread-local t_split (606 + argc) is checked against the program,
	// not gdb: gdb 13 reads split DWARF's TLS offsets from .debug_addr as
	// they are (PT_TLS addresses, see tls.Segment.Offset) and prints 0.
	if vs, err := r.Globals("t_split"); err != nil {
		t.Errorf("t_split: %v", err)
	} else if got, err := r.Read(vs[0], st.Frame(0)); err != nil {
		t.Errorf("t_split: %v", err)
	} else if n, _ := got.Int(); n != 607 {
		t.Errorf("t_split = %d, want 607", n)
	}
	t.Logf("%d values compared, %d from location lists", checked, lists)
	if checked < 17 {
		t.Fatalf("only %d values compared", checked)
	}
	if optimized && lists < 3 {
		t.Errorf("only %d variables with location lists at -O2", lists)
	}
}
