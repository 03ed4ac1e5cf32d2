package variables_test

import (
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/variables"
)

// TestCxxTypes decodes ex_cxx's C++ types: templates with their parameters,
// member pointers, inheritance with a vtable pointer, references, enum
// classes; under DWARF 4, DWARF 5 and DWARF 5 type units.
func TestCxxTypes(t *testing.T) {
	for _, flags := range [][]string{{"-O0", "-gdwarf-4"}, {"-O0", "-gdwarf-5"}, {"-O0", "-gdwarf-5", "-fdebug-types-section"},
		{"-O0", "-gdwarf-4", "-fdebug-types-section"}} {
		exe := testprog.Build(t, testprog.Spec{Sources: []string{"ex_cxx.cc"}, Flags: flags, Name: "ex_cxx_types"})
		b, err := symbols.Open(exe, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := variables.New(b)
		if err != nil {
			t.Fatal(err)
		}
		global := func(name string) *variables.Type {
			t.Helper()
			vs, err := r.Globals(name)
			if err != nil {
				t.Fatalf("%v: %s: %v", flags, name, err)
			}
			return vs[0].Type
		}
		buf := global("g_buf").Strip()
		if buf.Kind != variables.KindStruct || len(buf.TemplateParams) != 2 ||
			buf.TemplateParams[0].Name != "T" || buf.TemplateParams[0].Type.Name != "short int" ||
			buf.TemplateParams[1].Name != "N" || !buf.TemplateParams[1].HasValue || buf.TemplateParams[1].Value != 4 {
			t.Errorf("%v: Buffer<short, 4>: %+v", flags, buf.TemplateParams)
		}
		if s := global("g_buf").ByteSize(); s != 12 {
			t.Errorf("%v: sizeof Buffer<short, 4> = %d", flags, s)
		}
		mp := global("g_memptr").Strip()
		if mp.Kind != variables.KindMemberPointer || mp.Container == nil || mp.Container.Name != "Point" || mp.Elem.Name != "int" || mp.ByteSize() != 8 {
			t.Errorf("%v: int Point::*: %+v", flags, mp)
		}
		d := global("g_derived").Strip()
		if len(d.Fields) < 3 || !d.Fields[0].Base || d.Fields[0].Type.Strip().Name != "Base" || d.Fields[0].Offset != 0 {
			t.Fatalf("%v: Derived fields %+v", flags, d.Fields)
		}
		base := d.Fields[0].Type.Strip()
		if len(base.Fields) == 0 || !base.Fields[0].Artificial {
			t.Errorf("%v: Base has no artificial vtable pointer first: %+v", flags, base.Fields)
		}
		for _, f := range base.Fields {
			if f.Name == "instances" {
				t.Errorf("%v: the static member is a field", flags)
			}
		}
		m := global("g_multi").Strip()
		offsets := map[string]int64{}
		for _, f := range m.Fields {
			if f.Base {
				offsets[f.Type.Strip().Name] = f.Offset
			} else {
				offsets[f.Name] = f.Offset
			}
		}
		// Base (vtable pointer, id) is the primary base; Point reuses its
		// tail padding.
		if offsets["Base"] != 0 || offsets["Point"] != 12 || offsets["extra"] != 24 {
			t.Errorf("%v: Multi layout %v", flags, offsets)
		}
		mode := global("g_mode").Strip()
		if mode.Kind != variables.KindEnum || mode.ByteSize() != 1 || len(mode.Enumerators) != 2 || mode.Enumerators[1].Value != 7 || mode.IsSigned() {
			t.Errorf("%v: enum class Mode: %+v", flags, mode)
		}
		// The parameters of use: references and an rvalue reference.
		fns, err := b.LookupFunction("use")
		if err != nil || len(fns) == 0 {
			t.Fatalf("use: %v", err)
		}
		scopes, err := r.ScopesAt(fns[0].Entry)
		if err != nil || len(scopes) == 0 {
			t.Fatalf("scopes of use: %v", err)
		}
		kinds := map[string]string{}
		for _, v := range scopes[len(scopes)-1].Vars {
			kinds[v.Name] = v.Type.String()
		}
		for name, want := range map[string]string{"d": "geo::Derived &", "p": "const geo::Point &", "r": "geo::Point &&", "b": "geo::Buffer<short, 4> *"} {
			got := kinds[name]
			// Names are DWARF's (unqualified): compare the declarator.
			if got == "" || got[len(got)-1] != want[len(want)-1] {
				t.Errorf("%v: %s has type %q, want like %q", flags, name, got, want)
			}
		}
		b.Close()
	}
}
