package variables

import (
	"debug/dwarf"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestUnitFuncsMatchDecodedWalk: the function index unitFuncs builds from
// undecoded DIEs is the one a walk decoding every DIE builds (what it did
// before), for every unit of C and C++ programs (GCC at -O0 and -O2, DWARF
// 4 and 5, clang) and of a Rust program.
func TestUnitFuncsMatchDecodedWalk(t *testing.T) {
	paths := map[string]string{
		"dapclient_prog.cc": testprog.Build(t, testprog.Spec{Sources: []string{"dapclient_prog.cc"}, Flags: []string{"-O0"}, Name: "dapclient_prog_cc_qual"}),
		"qualname_cxx -O2":  testprog.Build(t, testprog.Spec{Sources: []string{"qualname_cxx.cc"}, Flags: []string{"-O2", "-gdwarf-4"}, Name: "qualname_cxx_O2_gdwarf-4"}),
		"ex_vars.c -O2":     testprog.Build(t, testprog.Spec{Sources: []string{"ex_vars.c"}, Flags: []string{"-O2", "-gdwarf-5"}, Name: "ex_vars_unitfuncs"}),
	}
	dir := t.TempDir()
	if clang, err := exec.LookPath("clang++"); err == nil {
		exe := filepath.Join(dir, "qualname_clang")
		if out, err := exec.Command(clang, "-g", "-O1", "-o", exe, testprog.Source("qualname_cxx.cc")).CombinedOutput(); err != nil {
			t.Fatalf("clang++: %v\n%s", err, out)
		}
		paths["clang -O1"] = exe
	}
	if testprog.Rustc() != "" {
		exe := testprog.BuildRust(t, "dapclient_prog.rs", "rust_main", "-C", "opt-level=0")
		paths["rust"] = exe
	}
	for name, path := range paths {
		r := openReader(t, path)
		r.mu.Lock()
		total := 0
		for i, u := range r.units {
			if u.unitType != utCompile {
				continue
			}
			got, want := r.unitFuncs(i), decodedUnitFuncs(r, i)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: unit %d: %d functions, the decoded walk finds %d", name, i, len(got), len(want))
			}
			total += len(got)
		}
		r.mu.Unlock()
		if total == 0 {
			t.Errorf("%s: no function indexed", name)
		}
		t.Logf("%s: %d function ranges", name, total)
	}
}

// decodedUnitFuncs is unitFuncs decoding every DIE it reads.
func decodedUnitFuncs(r *Reader, i int) []funcSpan {
	var spans []funcSpan
	rd := r.dieReader()
	rd.Seek(dwarf.Offset(r.units[i].dataOff))
	cu, err := rd.Next()
	if err == nil && cu != nil && cu.Children {
		depth := 1
		for depth > 0 {
			e, err := rd.Next()
			if err != nil || e == nil {
				break
			}
			if e.Tag == 0 {
				depth--
				continue
			}
			switch e.Tag {
			case dwarf.TagNamespace:
				if e.Children {
					depth++
				}
				continue
			case dwarf.TagSubprogram:
				if rs, err := r.rangesOf(e); err == nil {
					for _, rg := range rs {
						if rg[1] > rg[0] && rg[0] != 0 {
							spans = append(spans, funcSpan{rg[0], rg[1], e.Offset})
						}
					}
				}
			}
			if e.Children {
				rd.SkipChildren()
			}
		}
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].lo < spans[b].lo })
	return spans
}

// BenchmarkUnitFuncs: the function index of the one unit of
// testdata/dapclient_prog.cc (libstdc++'s headers: what a C++ program's
// first scopes request builds), in a new Reader: from undecoded DIEs
// (unitFuncs) and decoding every DIE read (what it did before).
func BenchmarkUnitFuncs(b *testing.B) {
	exe := testprog.Build(b, testprog.Spec{Sources: []string{"dapclient_prog.cc"}, Flags: []string{"-O0"}, Name: "dapclient_prog_cc_qual"})
	for _, c := range []struct {
		name  string
		index func(r *Reader, i int) []funcSpan
	}{{"undecoded", (*Reader).unitFuncs}, {"decoded", decodedUnitFuncs}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				r := openReaderB(b, exe)
				b.StartTimer()
				r.mu.Lock()
				if len(c.index(r, 0)) == 0 {
					b.Fatal("no functions")
				}
				r.mu.Unlock()
			}
		})
	}
}
