package variables_test

import (
	"os"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/variables"
)

// TestRustVariantPart decodes the DW_TAG_variant_part of Rust enums
// (testdata/dapreal/shop.rs): Option<u32>'s discriminant and its None and
// Some variants, Option<&Item>'s niche (no discriminant value for Some: the
// default), and the variant a value's bytes hold.
func TestRustVariantPart(t *testing.T) {
	exe := testprog.BuildRust(t, "dapreal/shop.rs", "shop", "-C", "opt-level=0")
	b, err := symbols.Open(exe, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := variables.New(b)
	if err != nil {
		t.Fatal(err)
	}
	find := func(name string) *variables.Type {
		t.Helper()
		ts, err := r.TypesByName(name)
		if err != nil || len(ts) == 0 {
			t.Fatalf("type %s: %v", name, err)
		}
		return ts[0].Strip()
	}
	opt := find("Option<u32>")
	vp := opt.Variants
	if vp == nil || vp.Discr == nil || len(vp.Variants) != 2 {
		t.Fatalf("Option<u32>: variant part %+v", vp)
	}
	names := map[string]bool{}
	for _, v := range vp.Variants {
		names[v.Field.Name] = v.HasValue
	}
	if !names["None"] || !names["Some"] {
		t.Errorf("Option<u32>: variants %v, want None and Some with discriminant values", names)
	}
	// Some(5): discriminant 1, the u32 after it.
	some := vp.Active([]byte{1, 0, 0, 0, 5, 0, 0, 0})
	none := vp.Active([]byte{0, 0, 0, 0, 9, 9, 9, 9})
	if some == nil || some.Field.Name != "Some" || none == nil || none.Field.Name != "None" {
		t.Errorf("Active: Some(5) gives %+v, None gives %+v", some, none)
	}
	if st := some.Field.Type.Strip(); st == nil || len(st.Fields) != 1 || st.Fields[0].Name != "__0" || st.Fields[0].Offset+some.Field.Offset != 4 {
		t.Errorf("Option<u32>::Some: %+v", st)
	}
	// Option<&Item>: the null pointer is None, any other value Some.
	ref := find("Option<&shop::Item>")
	if ref.Variants == nil {
		t.Fatalf("Option<&Item>: no variant part")
	}
	if v := ref.Variants.Active(make([]byte, 8)); v == nil || v.Field.Name != "None" {
		t.Errorf("Option<&Item> 0: %+v, want None", v)
	}
	if v := ref.Variants.Active([]byte{0x80, 0x3d, 0x34, 0x4a, 0x44, 0x56, 0, 0}); v == nil || v.Field.Name != "Some" {
		t.Errorf("Option<&Item> 0x56444a343d80: %+v, want Some", v)
	}
	// Bytes too short for the discriminant: no variant, no panic.
	if v := vp.Active([]byte{1}); v != nil {
		t.Errorf("Active of 1 byte: %+v", v)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
