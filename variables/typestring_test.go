package variables_test

import (
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/variables"
)

// TestTypeStringQualifiesCxx: TypeString names a C++ unit's types as gdb's
// whatis does (outer::Host *, outer::Host::Nested *), where String keeps
// C's spelling (class Host *).
func TestTypeStringQualifiesCxx(t *testing.T) {
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"qualname_cxx.cc"}, Flags: []string{"-O0", "-gdwarf-5"}, Name: "qualname_cxx"})
	b, err := symbols.Open(exe, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := variables.New(b)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := r.TypesByName("outer::Host")
	if err != nil || len(ts) == 0 {
		t.Fatalf("outer::Host: %v, %v", ts, err)
	}
	host := ts[0]
	p := &variables.Type{Kind: variables.KindPointer, Elem: &variables.Type{Kind: variables.KindConst, Elem: host}}
	if got, want := r.TypeString(p), "const outer::Host *"; got != want {
		t.Errorf("TypeString: %q, want %q", got, want)
	}
	if got, want := p.String(), "const class Host *"; got != want {
		t.Errorf("String: %q, want %q", got, want)
	}
	for _, f := range host.Strip().Fields {
		if f.Name == "nested" {
			if got, want := r.TypeString(f.Type), "outer::Host::Nested *"; got != want {
				t.Errorf("Host::nested: %q, want %q", got, want)
			}
		}
	}
}
