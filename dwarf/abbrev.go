package dwarf

import "fmt"

// AttrSpec is one attribute of an abbreviation.
type AttrSpec struct {
	Attr     uint16
	Form     uint16
	Implicit int64 // DW_FORM_implicit_const value
}

// Abbrev describes the shape of a DIE.
type Abbrev struct {
	Tag      uint16
	Children bool
	Attrs    []AttrSpec
	// sibling is set when Attrs has DW_AT_sibling (SkipChildren decodes
	// such a DIE to jump over its children; others it skips).
	sibling bool
}

// AbbrevTable maps abbreviation codes to abbreviations. Codes are usually
// small and dense, so they index a slice; others go to a map.
type AbbrevTable struct {
	dense  []*Abbrev
	sparse map[uint64]*Abbrev
}

// Lookup returns the abbreviation for code, or nil.
func (t *AbbrevTable) Lookup(code uint64) *Abbrev {
	if code < uint64(len(t.dense)) {
		return t.dense[code]
	}
	return t.sparse[code]
}

// ParseAbbrevs decodes the abbreviation table at off in .debug_abbrev.
func ParseAbbrevs(sec string, data []byte, off uint64) (*AbbrevTable, error) {
	r := NewCursor(sec, data, off)
	t := &AbbrevTable{}
	for r.err == nil {
		code := r.Uleb()
		if code == 0 || r.err != nil {
			break
		}
		a := &Abbrev{Tag: uint16(r.Uleb()), Children: r.U8() != 0}
		for r.err == nil {
			attr, form := r.Uleb(), r.Uleb()
			if attr == 0 && form == 0 {
				break
			}
			s := AttrSpec{Attr: uint16(attr), Form: uint16(form)}
			if form == formImplicitConst {
				s.Implicit = r.Sleb()
			}
			if attr > 0xffff || form > 0xffff {
				r.Fail(fmt.Sprintf("attribute %#x or form %#x out of range", attr, form))
			}
			a.Attrs = append(a.Attrs, s)
			a.sibling = a.sibling || s.Attr == AttrSibling
		}
		switch {
		case code < 4096:
			for uint64(len(t.dense)) <= code {
				t.dense = append(t.dense, nil)
			}
			if t.dense[code] != nil {
				r.Fail(fmt.Sprintf("duplicate abbreviation code %d", code))
			}
			t.dense[code] = a
		default:
			if t.sparse == nil {
				t.sparse = map[uint64]*Abbrev{}
			}
			t.sparse[code] = a
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return t, nil
}
