package dwarf

import "fmt"

// Class says how to interpret a Field's Val.
type Class uint8

const (
	ClassNone      Class = iota
	ClassAddress         // an address
	ClassAddrx           // an index into .debug_addr (relative to DW_AT_addr_base)
	ClassConst           // an unsigned constant
	ClassSConst          // a signed constant (Val holds the int64 bits)
	ClassFlag            // a flag (Val 0 or 1)
	ClassRef             // a DIE offset in this unit's section
	ClassRefAlt          // a DIE offset in the supplementary (dwz) file
	ClassRefSig          // a type signature
	ClassString          // an inline string: Val is its offset in the unit's section
	ClassStrp            // an offset in .debug_str
	ClassLineStrp        // an offset in .debug_line_str
	ClassStrx            // an index into .debug_str_offsets (relative to DW_AT_str_offsets_base)
	ClassStrpAlt         // an offset in the supplementary file's .debug_str
	ClassSecOffset       // an offset in another section (lines, ranges, location lists)
	ClassRnglistx        // an index into .debug_rnglists (relative to DW_AT_rnglists_base)
	ClassLoclistx        // an index into .debug_loclists
	ClassBlock           // a block or expression; not decoded (Val is its offset)
)

// Field is one decoded attribute.
type Field struct {
	Attr  uint16
	Form  uint16
	Len   uint32 // ClassBlock: the block's length (capped at 4 GiB)
	Class Class
	Val   uint64
}

// Entry is one DIE. Tag 0 is the null entry that ends a list of children.
type Entry struct {
	Offset   uint64
	Tag      uint16
	Children bool
	Fields   []Field
}

// Field returns the entry's attribute attr, or nil.
func (e *Entry) Field(attr uint16) *Field {
	for i := range e.Fields {
		if e.Fields[i].Attr == attr {
			return &e.Fields[i]
		}
	}
	return nil
}

// Int returns a constant attribute's value (0, false when absent or not a constant).
func (e *Entry) Int(attr uint16) (int64, bool) {
	f := e.Field(attr)
	if f == nil || (f.Class != ClassConst && f.Class != ClassSConst) {
		return 0, false
	}
	return int64(f.Val), true
}

// UnitReader reads the DIEs of one unit in order.
type UnitReader struct {
	u  *Unit
	ab *AbbrevTable
	r  Cursor
}

// NewUnitReader starts reading u's DIEs; data is the whole section holding u.
func NewUnitReader(sec string, data []byte, u *Unit, ab *AbbrevTable) *UnitReader {
	end := u.End
	if end > uint64(len(data)) {
		end = uint64(len(data))
	}
	ur := &UnitReader{u: u, ab: ab, r: NewCursor(sec, data[:end], u.DataOffset)}
	return ur
}

// Unit returns the unit being read.
func (ur *UnitReader) Unit() *Unit { return ur.u }

// Offset returns the section offset of the next DIE.
func (ur *UnitReader) Offset() uint64 { return ur.r.off }

// Seek positions the reader at the DIE at section offset off (inside the unit).
func (ur *UnitReader) Seek(off uint64) error {
	if off < ur.u.DataOffset || off >= ur.u.End || off > uint64(len(ur.r.data)) {
		return &FormatError{ur.r.sec, off, "DIE offset outside its unit"}
	}
	ur.r.off = off
	ur.r.err = nil
	return nil
}

// Done reports whether the unit has no more DIEs.
func (ur *UnitReader) Done() bool { return ur.r.err != nil || ur.r.off >= uint64(len(ur.r.data)) }

// Next decodes the DIE at the cursor into e, reusing e.Fields' storage.
func (ur *UnitReader) Next(e *Entry) error {
	r := &ur.r
	e.Offset = r.off
	e.Fields = e.Fields[:0]
	code := r.Uleb()
	if r.err != nil {
		return r.err
	}
	if code == 0 {
		e.Tag, e.Children = 0, false
		return nil
	}
	a := ur.ab.Lookup(code)
	if a == nil {
		return &FormatError{r.sec, e.Offset, fmt.Sprintf("unknown abbreviation code %d", code)}
	}
	e.Tag, e.Children = a.Tag, a.Children
	for _, s := range a.Attrs {
		f := Field{Attr: s.Attr, Form: s.Form}
		ur.value(&f, s.Implicit)
		if r.err != nil {
			return r.err
		}
		e.Fields = append(e.Fields, f)
	}
	return nil
}

// NextSkipping is Next for walks that need the attributes of a few tags
// only: a childless DIE whose tag keep rejects has its attributes skipped,
// not decoded (e.Fields is empty). DIEs with children are always decoded,
// so that their DW_AT_sibling can be used to skip them.
func (ur *UnitReader) NextSkipping(e *Entry, keep func(tag uint16) bool) error {
	r := &ur.r
	start := r.off
	code := r.Uleb()
	if r.err != nil {
		return r.err
	}
	if code != 0 {
		if a := ur.ab.Lookup(code); a != nil && !a.Children && !keep(a.Tag) {
			e.Offset, e.Tag, e.Children, e.Fields = start, a.Tag, false, e.Fields[:0]
			ur.skipAttrs(a)
			return r.err
		}
	}
	r.off = start
	return ur.Next(e)
}

// skipAttrs moves past the attribute values of a DIE with abbreviation a.
func (ur *UnitReader) skipAttrs(a *Abbrev) {
	r := &ur.r
	u := ur.u
	offSize := uint64(4)
	if u.Is64 {
		offSize = 8
	}
	for _, s := range a.Attrs {
		if r.err != nil {
			return
		}
		if n := fixedFormOf(s.Form).size; n != 0 {
			r.Skip(uint64(n))
			continue
		}
		switch s.Form {
		case formFlagPresent, formImplicitConst:
		case formData16:
			r.Skip(16)
		case formAddr:
			r.Skip(uint64(u.AddrSize))
		case formStrp, formLineStrp, formSecOffset, formStrpSup, formGNUStrpAlt, formGNURefAlt:
			r.Skip(offSize)
		case formRefAddr:
			if u.Version <= 2 {
				r.Skip(uint64(u.AddrSize))
			} else {
				r.Skip(offSize)
			}
		case formUdata, formSdata, formRefUdata, formStrx, formAddrx, formRnglistx, formLoclistx,
			formGNUAddrIndex, formGNUStrIndex:
			r.Uleb()
		case formString:
			r.CStr()
		default: // blocks, indirect: the general decoder knows them
			var f Field
			f.Form = s.Form
			ur.value(&f, s.Implicit)
		}
	}
}

// SkipChildren moves past the children of e (just read by Next): via its
// DW_AT_sibling when it has a usable one, else by reading them.
func (ur *UnitReader) SkipChildren(e *Entry) error {
	if !e.Children {
		return nil
	}
	if f := e.Field(AttrSibling); f != nil && f.Class == ClassRef && f.Val > e.Offset && f.Val <= ur.u.End {
		ur.r.off = f.Val
		return nil
	}
	var tmp Entry
	depth := 1
	r := &ur.r
	for depth > 0 {
		if ur.Done() {
			if r.err != nil {
				return r.err
			}
			return nil // unit ended without null entries: tolerated
		}
		// Only a DIE with children and a DW_AT_sibling is decoded (to jump
		// by it); the others' attributes are skipped by their forms.
		start := r.off
		code := r.Uleb()
		if r.err != nil {
			return r.err
		}
		if code == 0 {
			depth--
			continue
		}
		a := ur.ab.Lookup(code)
		if a == nil {
			return &FormatError{r.sec, start, fmt.Sprintf("unknown abbreviation code %d", code)}
		}
		if !a.Children || !a.sibling {
			ur.skipAttrs(a)
			if r.err != nil {
				return r.err
			}
			if a.Children {
				depth++
			}
			continue
		}
		r.off = start
		if err := ur.Next(&tmp); err != nil {
			return err
		}
		if f := tmp.Field(AttrSibling); f != nil && f.Class == ClassRef && f.Val > tmp.Offset && f.Val <= ur.u.End {
			r.off = f.Val
		} else {
			depth++
		}
	}
	return nil
}

// fixedForm is the class and size of a form whose value is an unsigned
// integer of a fixed size (size 0: the form is not one of them).
type fixedForm struct {
	class Class
	size  uint8
}

// fixedForms holds, by form, the forms whose value is an unsigned integer
// of 1, 2, 3, 4 or 8 bytes: value decodes and skipAttrs skips them all
// alike. A DW_FORM_ref* value is relative to its unit.
var fixedForms = [...]fixedForm{
	formData1: {ClassConst, 1}, formData2: {ClassConst, 2}, formData4: {ClassConst, 4}, formData8: {ClassConst, 8},
	formFlag: {ClassFlag, 1},
	formRef1: {ClassRef, 1}, formRef2: {ClassRef, 2}, formRef4: {ClassRef, 4}, formRef8: {ClassRef, 8},
	formRefSig8: {ClassRefSig, 8},
	formRefSup4: {ClassRefAlt, 4}, formRefSup8: {ClassRefAlt, 8},
	formStrx1: {ClassStrx, 1}, formStrx2: {ClassStrx, 2}, formStrx3: {ClassStrx, 3}, formStrx4: {ClassStrx, 4},
	formAddrx1: {ClassAddrx, 1}, formAddrx2: {ClassAddrx, 2}, formAddrx3: {ClassAddrx, 3}, formAddrx4: {ClassAddrx, 4},
}

func fixedFormOf(form uint16) fixedForm {
	if int(form) < len(fixedForms) {
		return fixedForms[form]
	}
	return fixedForm{}
}

// value decodes one attribute value of form f.Form.
func (ur *UnitReader) value(f *Field, implicit int64) {
	r := &ur.r
	u := ur.u
	for hops := 0; ; hops++ {
		if ff := fixedFormOf(f.Form); ff.size != 0 {
			f.Class, f.Val = ff.class, r.fixed(ff.size)
			if ff.class == ClassRef {
				f.Val += u.Offset // unit-relative
			}
			return
		}
		switch f.Form {
		case formAddr:
			f.Class, f.Val = ClassAddress, r.Sized(u.AddrSize)
		case formAddrx, formGNUAddrIndex:
			f.Class, f.Val = ClassAddrx, r.Uleb()
		case formUdata:
			f.Class, f.Val = ClassConst, r.Uleb()
		case formSdata:
			f.Class, f.Val = ClassSConst, uint64(r.Sleb())
		case formImplicitConst:
			f.Class, f.Val = ClassSConst, uint64(implicit)
		case formData16:
			f.Class, f.Val, f.Len = ClassBlock, r.off, 16
			r.Skip(16)
		case formFlagPresent:
			f.Class, f.Val = ClassFlag, 1
		case formRefUdata:
			f.Class, f.Val = ClassRef, u.Offset+r.Uleb()
		case formRefAddr:
			if u.Version <= 2 {
				f.Class, f.Val = ClassRef, r.Sized(u.AddrSize)
			} else {
				f.Class, f.Val = ClassRef, r.SecOffset(u.Is64)
			}
		case formGNURefAlt:
			f.Class, f.Val = ClassRefAlt, r.SecOffset(u.Is64)
		case formString:
			f.Class, f.Val = ClassString, r.off
			r.CStr()
		case formStrp:
			f.Class, f.Val = ClassStrp, r.SecOffset(u.Is64)
		case formLineStrp:
			f.Class, f.Val = ClassLineStrp, r.SecOffset(u.Is64)
		case formStrpSup, formGNUStrpAlt:
			f.Class, f.Val = ClassStrpAlt, r.SecOffset(u.Is64)
		case formStrx, formGNUStrIndex:
			f.Class, f.Val = ClassStrx, r.Uleb()
		case formSecOffset:
			f.Class, f.Val = ClassSecOffset, r.SecOffset(u.Is64)
		case formRnglistx:
			f.Class, f.Val = ClassRnglistx, r.Uleb()
		case formLoclistx:
			f.Class, f.Val = ClassLoclistx, r.Uleb()
		case formExprloc, formBlock, formBlock1, formBlock2, formBlock4:
			var n uint64 // the block's length, then the block
			switch f.Form {
			case formBlock1:
				n = uint64(r.U8())
			case formBlock2:
				n = uint64(r.U16())
			case formBlock4:
				n = uint64(r.U32())
			default:
				n = r.Uleb()
			}
			f.Class, f.Val, f.Len = ClassBlock, r.off, uint32(min(n, 1<<32-1))
			r.Skip(n)
		case formIndirect:
			if hops > 4 {
				r.Fail("DW_FORM_indirect chain too long")
				return
			}
			f.Form = uint16(r.Uleb())
			if f.Form == formImplicitConst {
				implicit = r.Sleb()
			}
			continue
		default:
			r.Fail(fmt.Sprintf("unknown attribute form %#x", f.Form))
		}
		return
	}
}

// StrOffset reads entry index of a .debug_str_offsets table whose entries
// start at base (DW_AT_str_offsets_base, or the .dwo section's header end).
func StrOffset(strOffsets []byte, base uint64, index uint64, is64 bool) (uint64, error) {
	size := uint64(4)
	if is64 {
		size = 8
	}
	if index > uint64(len(strOffsets))/size {
		return 0, &FormatError{".debug_str_offsets", base, fmt.Sprintf("string index %d out of range", index)}
	}
	r := NewCursor(".debug_str_offsets", strOffsets, base+index*size)
	v := r.SecOffset(is64)
	return v, r.err
}

// AddrAt reads entry index of the .debug_addr table starting at base.
func AddrAt(addr []byte, base uint64, index uint64, addrSize uint8) (uint64, error) {
	if addrSize == 0 || index > uint64(len(addr))/uint64(addrSize) {
		return 0, &FormatError{".debug_addr", base, fmt.Sprintf("address index %d out of range", index)}
	}
	r := NewCursor(".debug_addr", addr, base+index*uint64(addrSize))
	v := r.Sized(addrSize)
	return v, r.err
}
