package variables

import (
	"debug/dwarf"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols"
)

// TestQualifiedOfMatchesIndex: the qualified name qualifiedOf finds by
// walking down to one DIE is the one the whole name index records, for
// every DIE of C++ programs (libstdc++'s headers: namespaces, nested and
// anonymous namespaces, classes in classes, templates, types local to
// functions) built by GCC (DWARF 4, 5, type units) and clang, and of a
// Rust program (std's modules) — and finding them builds no index.
func TestQualifiedOfMatchesIndex(t *testing.T) {
	type bin struct{ name, path string }
	var bins []bin
	for _, flags := range [][]string{{"-O0", "-gdwarf-5"}, {"-O2", "-gdwarf-4"}, {"-O0", "-gdwarf-4", "-fdebug-types-section"}, {"-O0", "-gdwarf-5", "-fdebug-types-section"}} {
		name := "qualname_cxx"
		for _, f := range flags {
			name += "_" + f[1:]
		}
		bins = append(bins, bin{name, testprog.Build(t, testprog.Spec{Sources: []string{"qualname_cxx.cc"}, Flags: flags, Name: name})})
	}
	bins = append(bins, bin{"dapclient_prog.cc", testprog.Build(t, testprog.Spec{Sources: []string{"dapclient_prog.cc"}, Flags: []string{"-O0"}, Name: "dapclient_prog_cc_qual"})})
	dir := t.TempDir()
	if clang, err := exec.LookPath("clang++"); err == nil {
		exe := filepath.Join(dir, "qualname_clang")
		if out, err := exec.Command(clang, "-g", "-O0", "-o", exe, testprog.Source("qualname_cxx.cc")).CombinedOutput(); err != nil {
			t.Fatalf("clang++: %v\n%s", err, out)
		}
		bins = append(bins, bin{"clang", exe})
	} else {
		t.Log("clang++ not installed: GCC's DWARF only")
	}
	if testprog.Rustc() != "" {
		exe := testprog.BuildRust(t, "dapclient_prog.rs", "rust_main", "-C", "opt-level=0")
		bins = append(bins, bin{"rust", exe})
	} else {
		t.Log("rustc not installed (scripts/setup installs it): no Rust program")
	}
	for _, b := range bins {
		t.Run(b.name, func(t *testing.T) {
			index, walk := openReader(t, b.path), openReader(t, b.path)
			index.mu.Lock()
			index.indexNames()
			want := index.qualified
			index.mu.Unlock()
			walk.mu.Lock()
			defer walk.mu.Unlock()
			checked, found := 0, 0
			dies := allDIEs(t, walk)
			// The DIEs the index names and about 1000 others (Rust's std
			// unit has 64,000 DIEs, and a walk there takes up to a few ms).
			step := max(1, len(dies)/1000)
			for i, off := range dies {
				if _, named := want[off]; !named && i%step != 0 {
					continue
				}
				q, ok, exact := walk.qualifiedOf(off)
				if !exact {
					t.Fatalf("DIE %#x: the walk could not tell", off)
				}
				if w, wok := want[off]; ok != wok || q != w {
					t.Errorf("DIE %#x: walk %q %v, index %q %v", off, q, ok, w, wok)
				}
				checked++
				if ok {
					found++
				}
			}
			if walk.globals != nil {
				t.Error("the walk built the name index")
			}
			if found == 0 || found != len(want) {
				t.Errorf("%d qualified names found by the walk among %d DIEs, the index has %d", found, checked, len(want))
			}
			t.Logf("%d DIEs, %d qualified names", checked, found)
		})
	}
}

func openReader(t *testing.T, path string) *Reader { return openReaderB(t, path) }

func openReaderB(t testing.TB, path string) *Reader {
	t.Helper()
	b, err := symbols.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// allDIEs returns the offset of every DIE of r's units.
func allDIEs(t *testing.T, r *Reader) []dwarf.Offset {
	var out []dwarf.Offset
	rd := r.dieReader()
	for _, u := range r.units {
		rd.Seek(dwarf.Offset(u.dataOff))
		for {
			e, err := rd.Next()
			if err != nil {
				t.Fatal(err)
			}
			if e == nil {
				break
			}
			if e.Tag != 0 {
				out = append(out, e.Offset)
			}
		}
	}
	return out
}

// BenchmarkFirstQualifiedName: the qualified name of a base class
// (std::allocator<char>, printed in a std::string's value) in a new Reader
// of a small C++ program (testdata/dapclient_prog.cc, one unit holding
// libstdc++'s headers): by the walk down to its DIE, and by the whole name
// index it used to build.
func BenchmarkFirstQualifiedName(b *testing.B) {
	exe := testprog.Build(b, testprog.Spec{Sources: []string{"dapclient_prog.cc"}, Flags: []string{"-O0"}, Name: "dapclient_prog_cc_qual"})
	bin, err := symbols.Open(exe, nil)
	if err != nil {
		b.Fatal(err)
	}
	r0, err := New(bin)
	if err != nil {
		b.Fatal(err)
	}
	r0.mu.Lock()
	r0.indexNames()
	var off dwarf.Offset
	for o, q := range r0.qualified {
		if q == "std::allocator<char>" {
			off = o
		}
	}
	r0.mu.Unlock()
	if off == 0 {
		b.Fatal("no std::allocator<char> in the index")
	}
	fresh := func() *Reader {
		r, err := New(bin)
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	b.Run("walk", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			r := fresh()
			b.StartTimer()
			if q := r.QualifiedName(&Type{Offset: uint64(off), Name: "allocator<char>"}); q != "std::allocator<char>" {
				b.Fatalf("got %q", q)
			}
		}
	})
	b.Run("index", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			r := fresh()
			b.StartTimer()
			r.mu.Lock()
			r.indexNames()
			r.mu.Unlock()
		}
	})
}
