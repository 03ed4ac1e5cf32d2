package variables_test

import (
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/variables"
	"github.com/sondedbg/sonde/variables/vartest"
)

// rsLocals are rs_syntax's locals: every shape of Rust value.
var rsLocals = []string{"p", "t", "pr", "u", "c", "sq", "e", "o", "on", "ch", "b", "arr", "zeros", "empty", "sl", "esl",
	"s", "pts", "nested", "col", "bits", "h", "h.at", "h.maybe"}

// TestRustSyntaxMatchGDB prints rs_syntax's locals (structs, tuples, tuple
// and unit structs, enums with and without data, Option, C-like enums,
// unions, chars, arrays, slices, &str, the unit type, references) and
// compares each with gdb's print in the Rust frame, at the same stop:
// Rust's syntax, types by their paths (rs_syntax::Point {x: 1, y: 2}).
func TestRustSyntaxMatchGDB(t *testing.T) {
	exe := testprog.BuildRust(t, "rs_syntax.rs", "rs_syntax", "-C", "opt-level=0")
	stop := vartest.GDBStop(t, exe, "rs_syntax::stop_here", map[int][]string{1: rsLocals})
	if v := stop.Results[1]["p"].Value; !strings.HasPrefix(v, "rs_syntax::Point {") {
		t.Skipf("SKIP: gdb does not print Rust values in Rust's syntax (p = %q)", v)
	}
	f, r := stop.Frame(t, 1)
	if r.NamesIndexed() {
		t.Fatal("the name index is built before anything is printed")
	}
	read := func(name string) (variables.Value, error) {
		base, member, _ := strings.Cut(name, ".")
		v := findVar(t, r, f, base)
		if v == nil {
			t.Fatalf("%s: not found", base)
		}
		val, err := r.Read(v, f)
		if member == "" || err != nil {
			return val, err
		}
		for _, fl := range val.Type.Strip().Fields {
			if fl.Name == member {
				return variables.Value{Type: fl.Type, Bytes: val.Bytes[fl.Offset : fl.Offset+fl.Type.ByteSize()],
					Place: variables.PlaceMemory, Address: val.Address + uint64(fl.Offset)}, nil
			}
		}
		t.Fatalf("%s: no member %s", base, member)
		return val, nil
	}
	for _, name := range rsLocals {
		val, err := read(name)
		for _, pretty := range []bool{false, true} {
			if _, ok := r.Container(val, f); ok && pretty {
				continue // a slice: rust-gdb's printer's form (TestRustContainersMatchGDB)
			}
			got := r.Format(val, err, f, variables.FormatOptions{Pretty: pretty})
			if want := stop.Results[1][name].Value; got != want {
				t.Errorf("%s (pretty %v):\nsonde %s\ngdb   %s", name, pretty, got, want)
			}
		}
	}
	if r.NamesIndexed() {
		t.Error("printing Rust paths built the name index")
	}
}

// BenchmarkRustScopes is the cost of the first Rust value printed in a
// unit: reading that one unit's namespaces and types for the types' paths
// (a fresh Reader each time; rs_syntax's unit holds the std types it
// uses), then printing rs_syntax's main's locals in Rust's syntax; against
// the name index QualifiedName builds, and warm.
func BenchmarkRustScopes(b *testing.B) {
	exe := testprog.BuildRust(b, "rs_syntax.rs", "rs_syntax", "-C", "opt-level=0")
	stop := vartest.GDBStop(b, exe, "rs_syntax::stop_here", map[int][]string{1: {"p"}})
	_, th := stop.Open(b)
	st, err := vartest.Stack(th)
	if err != nil {
		b.Fatal(err)
	}
	f := st.Frame(1)
	r0, err := f.Reader()
	if err != nil {
		b.Fatal(err)
	}
	scopes, err := r0.ScopesAt(variables.LookupPC(f))
	if err != nil {
		b.Fatal(err)
	}
	var dies []uint64
	for _, s := range scopes {
		for _, v := range s.Vars {
			dies = append(dies, v.Offset)
		}
	}
	bin, err := symbols.Open(exe, nil)
	if err != nil {
		b.Fatal(err)
	}
	format := func(r *variables.Reader) {
		for _, d := range dies {
			v, err := r.VariableAt(d)
			if err != nil {
				b.Fatal(err)
			}
			val, err := r.Read(v, f)
			r.Format(val, err, f, variables.FormatOptions{})
		}
	}
	b.Run("cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r, err := variables.New(bin)
			if err != nil {
				b.Fatal(err)
			}
			format(r)
		}
	})
	// What the same paths cost through the name index (every unit read).
	b.Run("index", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r, err := variables.New(bin)
			if err != nil {
				b.Fatal(err)
			}
			v, err := r.VariableAt(dies[0])
			if err != nil {
				b.Fatal(err)
			}
			r.QualifiedName(v.Type)
		}
	})
	b.Run("warm", func(b *testing.B) {
		r, err := variables.New(bin)
		if err != nil {
			b.Fatal(err)
		}
		format(r)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			format(r)
		}
	})
}
