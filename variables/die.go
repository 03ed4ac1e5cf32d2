package variables

import (
	"debug/dwarf"
	"fmt"

	dw "github.com/sondedbg/sonde/dwarf"
)

// The variables reader decodes DIEs with the module's DWARF reader (package
// sonde/dwarf) and resolves their attribute values here, per unit, into
// the values the rest of the package works with: strings (inline, .debug_str,
// .debug_line_str, or indexed through .debug_str_offsets), addresses (direct
// or indexed through .debug_addr), references as DIE offsets, constants as
// int64, flags as bool, blocks and expressions as byte slices. Offsets are
// in one space per Reader: .debug_info's, then DWARF 4's .debug_types
// placed after it (unitInfo.base), so that a type unit's DIEs have offsets
// of their own without any section being copied or rewritten. Only the
// constant types of the standard debug/dwarf (Tag, Attr, Class, Offset) are
// used.

// entry is one DIE with its attribute values resolved.
type entry struct {
	Offset   dwarf.Offset
	Tag      dwarf.Tag
	Children bool
	Field    []field
}

// field is one resolved attribute.
type field struct {
	Attr  dwarf.Attr
	Val   any
	Class dwarf.Class
}

// Val returns the value of attribute a, or nil.
func (e *entry) Val(a dwarf.Attr) any {
	if f := e.AttrField(a); f != nil {
		return f.Val
	}
	return nil
}

// AttrField returns attribute a, or nil.
func (e *entry) AttrField(a dwarf.Attr) *field {
	for i := range e.Field {
		if e.Field[i].Attr == a {
			return &e.Field[i]
		}
	}
	return nil
}

// dieReader reads the DIEs of one unit in order, from where Seek put it;
// Next returns nil at the end of the unit. Callers hold r.mu.
type dieReader struct {
	r    *Reader
	unit int
	ur   *dw.UnitReader
	raw  dw.Entry
	err  error
}

func (r *Reader) dieReader() *dieReader { return &dieReader{r: r, unit: -1} }

// Seek positions the reader at the DIE at (Reader-space) offset off.
func (d *dieReader) Seek(off dwarf.Offset) {
	d.err, d.ur = nil, nil
	i := d.r.unitOf(off)
	if i < 0 {
		d.err = bad("read DIE", uint64(off), "offset is in no unit")
		return
	}
	if d.unit != i || d.ur == nil {
		ur, err := d.r.unitReader(i)
		if err != nil {
			d.err = err
			return
		}
		d.unit, d.ur = i, ur
	}
	if err := d.ur.Seek(uint64(off) - d.r.units[i].base); err != nil {
		d.err = &Error{Op: "read DIE", Offset: uint64(off), Err: fmt.Errorf("%w: %v", ErrBadDWARF, err)}
	}
}

// Next decodes the next DIE (Tag 0 for the null entry ending a list of
// children), or returns nil at the end of the unit.
func (d *dieReader) Next() (*entry, error) {
	if d.err != nil {
		return nil, d.err
	}
	if d.ur == nil || d.ur.Done() {
		return nil, nil
	}
	if err := d.ur.Next(&d.raw); err != nil {
		d.err = &Error{Op: "read DIE", Offset: d.r.units[d.unit].base + d.raw.Offset, Err: fmt.Errorf("%w: %v", ErrBadDWARF, err)}
		return nil, d.err
	}
	return d.r.resolveDIE(d.unit, &d.raw), nil
}

// SkipChildren moves past the children of the DIE Next returned last.
func (d *dieReader) SkipChildren() {
	if d.ur != nil && d.err == nil {
		if err := d.ur.SkipChildren(&d.raw); err != nil {
			d.err = &Error{Op: "skip DIE children", Offset: d.r.units[d.unit].base + d.raw.Offset, Err: fmt.Errorf("%w: %v", ErrBadDWARF, err)}
		}
	}
}

// unitReader starts a reader over unit i's DIEs.
func (r *Reader) unitReader(i int) (*dw.UnitReader, error) {
	u := &r.units[i]
	ab, err := r.abbrevTable(u.hdr.AbbrevOff, u.alt)
	if err != nil {
		return nil, &Error{Op: "read abbreviations", Offset: u.off, Err: fmt.Errorf("%w: %v", ErrBadDWARF, err)}
	}
	sec, data := ".debug_info", r.unitData(u)
	if u.types {
		sec = ".debug_types"
	}
	return dw.NewUnitReader(sec, data, &u.hdr, ab), nil
}

// abbrevTable decodes (once) the abbreviation table at off.
func (r *Reader) abbrevTable(off uint64, alt bool) (*dw.AbbrevTable, error) {
	r.abbrevMu.Lock()
	defer r.abbrevMu.Unlock()
	key, sec := off, r.abbrev
	if alt {
		key, sec = off|altAbbrevKey, r.alt.abbrev
	}
	if t, ok := r.abbrevs[key]; ok {
		return t, nil
	}
	t, err := dw.ParseAbbrevs(".debug_abbrev", sec, off)
	if err != nil {
		return nil, err
	}
	if r.abbrevs == nil {
		r.abbrevs = map[uint64]*dw.AbbrevTable{}
	}
	r.abbrevs[key] = t
	return t, nil
}

// resolveDIE turns a raw DIE of unit i into an entry. Values that cannot be
// resolved (a string index past its table, say) are left nil.
func (r *Reader) resolveDIE(i int, raw *dw.Entry) *entry {
	u := &r.units[i]
	e := &entry{Offset: dwarf.Offset(u.base + raw.Offset), Tag: dwarf.Tag(raw.Tag), Children: raw.Children}
	if raw.Tag == 0 {
		return e
	}
	if !u.dieRead {
		r.unitDIE(i) // the bases indexed forms need
	}
	e.Field = make([]field, len(raw.Fields))
	for k := range raw.Fields {
		e.Field[k] = r.value(u, &raw.Fields[k])
	}
	return e
}

// value resolves one attribute of a DIE of unit u.
func (r *Reader) value(u *unitInfo, f *dw.Field) field {
	out := field{Attr: dwarf.Attr(f.Attr)}
	switch f.Class {
	case dw.ClassAddress:
		out.Val, out.Class = f.Val, dwarf.ClassAddress
	case dw.ClassAddrx:
		out.Class = dwarf.ClassAddress
		if v, err := r.addrx(u, f.Val); err == nil {
			out.Val = v
		}
	case dw.ClassConst, dw.ClassSConst:
		out.Val, out.Class = int64(f.Val), dwarf.ClassConstant
		if c, ok := ptrClass[out.Attr]; ok && u.version < 4 {
			out.Class = c
		}
	case dw.ClassFlag:
		out.Val, out.Class = f.Val != 0, dwarf.ClassFlag
	case dw.ClassRef:
		out.Val, out.Class = dwarf.Offset(u.base+f.Val), dwarf.ClassReference
	case dw.ClassRefSig:
		out.Val, out.Class = f.Val, dwarf.ClassReferenceSig
	case dw.ClassRefAlt:
		out.Val, out.Class = f.Val, dwarf.ClassReferenceAlt
		if off, ok := r.altRef(f.Val); ok {
			out.Val, out.Class = off, dwarf.ClassReference
		}
	case dw.ClassString, dw.ClassStrp, dw.ClassLineStrp, dw.ClassStrx:
		out.Class = dwarf.ClassString
		if s, err := r.str(u, f); err == nil {
			out.Val = s
		}
	case dw.ClassStrpAlt:
		out.Val, out.Class = int64(f.Val), dwarf.ClassStringAlt
		if s, err := r.str(u, f); err == nil {
			out.Val, out.Class = s, dwarf.ClassString
		}
	case dw.ClassSecOffset:
		out.Val, out.Class = int64(f.Val), ptrClass[out.Attr]
	case dw.ClassRnglistx:
		out.Val, out.Class = int64(f.Val), dwarf.ClassRngList
	case dw.ClassLoclistx:
		out.Val, out.Class = int64(f.Val), dwarf.ClassLocList
	case dw.ClassBlock:
		data := r.unitData(u)
		if f.Val <= uint64(len(data)) && uint64(f.Len) <= uint64(len(data))-f.Val {
			out.Val = data[f.Val : f.Val+uint64(f.Len) : f.Val+uint64(f.Len)]
		}
		out.Class = dwarf.ClassBlock
		switch f.Form {
		case 0x18: // DW_FORM_exprloc
			out.Class = dwarf.ClassExprLoc
		case 0x1e: // DW_FORM_data16
			out.Class = dwarf.ClassConstant
		}
	}
	return out
}

// ptrClass is the class of a section offset, by attribute (DWARF 2 and 3
// encode these as data4 or data8 constants).
var ptrClass = map[dwarf.Attr]dwarf.Class{
	dwarf.AttrLocation: dwarf.ClassLocListPtr, dwarf.AttrStmtList: dwarf.ClassLinePtr,
	dwarf.AttrStringLength: dwarf.ClassLocListPtr, dwarf.AttrReturnAddr: dwarf.ClassLocListPtr,
	dwarf.AttrStartScope: dwarf.ClassRangeListPtr, dwarf.AttrDataMemberLoc: dwarf.ClassLocListPtr,
	dwarf.AttrFrameBase: dwarf.ClassLocListPtr, dwarf.AttrMacroInfo: dwarf.ClassMacPtr,
	dwarf.AttrSegment: dwarf.ClassLocListPtr, dwarf.AttrStaticLink: dwarf.ClassLocListPtr,
	dwarf.AttrUseLocation: dwarf.ClassLocListPtr, dwarf.AttrVtableElemLoc: dwarf.ClassLocListPtr,
	dwarf.AttrRanges: dwarf.ClassRangeListPtr, dwarf.AttrStrOffsetsBase: dwarf.ClassStrOffsetsPtr,
	dwarf.AttrAddrBase: dwarf.ClassAddrPtr, dwarf.AttrRnglistsBase: dwarf.ClassRngListsPtr,
	dwarf.AttrLoclistsBase: dwarf.ClassLocListPtr,
}

// unitData returns the section holding unit u.
func (r *Reader) unitData(u *unitInfo) []byte {
	if u.types {
		return r.typesSec
	}
	if u.alt {
		return r.alt.info
	}
	return r.info
}

// str resolves a string attribute of a DIE of unit u.
func (r *Reader) str(u *unitInfo, f *dw.Field) (string, error) {
	sec := ".debug_info"
	if u.types {
		sec = ".debug_types"
	}
	return dw.String(f, &u.hdr, sec, u.strOffBase, func(s dw.StrSection) []byte {
		switch s {
		case dw.StrUnit:
			return r.unitData(u)
		case dw.StrStr:
			if u.alt {
				return r.alt.str
			}
			return r.strSec
		case dw.StrLineStr:
			return r.lineStr
		case dw.StrOffsets:
			return r.strOffsets
		case dw.StrAlt:
			return r.alt.str
		}
		return nil
	})
}

// rangesOf returns the code ranges of a DIE: DW_AT_low_pc and DW_AT_high_pc,
// or DW_AT_ranges (.debug_ranges, .debug_rnglists, an index into the
// latter, or, in a GNU split DWARF 4 unit, the binary's .debug_ranges from
// the skeleton's DW_AT_GNU_ranges_base). Callers hold r.mu.
func (r *Reader) rangesOf(e *entry) ([][2]uint64, error) {
	i := r.unitOf(e.Offset)
	if i < 0 {
		return nil, bad("read ranges", uint64(e.Offset), "DIE in no unit")
	}
	u := r.unitDIE(i)
	if f := e.AttrField(dwarf.AttrRanges); f != nil {
		off, ok := f.Val.(int64)
		if !ok || off < 0 {
			return nil, bad("read ranges", uint64(e.Offset), "DW_AT_ranges of class %v", f.Class)
		}
		rs, err := r.rangeList(u, uint64(off), f.Class == dwarf.ClassRngList)
		out := make([][2]uint64, 0, len(rs))
		for _, rg := range rs {
			out = append(out, [2]uint64{rg.Lo, rg.Hi})
		}
		if err != nil {
			return out, &Error{Op: "read ranges", Offset: uint64(e.Offset), Err: fmt.Errorf("%w: %v", ErrBadDWARF, err)}
		}
		return out, nil
	}
	lo, ok := e.Val(dwarf.AttrLowpc).(uint64)
	if !ok {
		return nil, nil
	}
	var hi uint64
	switch v := e.Val(dwarf.AttrHighpc).(type) {
	case uint64:
		hi = v
	case int64:
		hi = lo + uint64(v)
	default:
		return nil, nil
	}
	// An empty range is kept: a scope with one covers no pc, unlike one
	// without ranges, which is transparent (an inlined call the compiler
	// reduced to nothing is not a scope of the code around it).
	return [][2]uint64{{lo, hi}}, nil
}

// rangeList decodes the range list DW_AT_ranges names (an offset, or an
// index when indexed). Empty ranges are kept, as for low_pc/high_pc (see
// rangesOf).
func (r *Reader) rangeList(u *unitInfo, v uint64, indexed bool) ([]dw.Range, error) {
	b := r.bases(u)
	ur := r.unitRanges(u, &b)
	return ur.List(v, indexed, nil)
}

// bases are u's bases of indexed forms as its DIEs resolve them: a GNU
// split DWARF 4 unit's ranges count from its skeleton's
// DW_AT_GNU_ranges_base, and no other unit's do (a skeleton's own
// DW_AT_ranges is an offset of its own, as gdb reads it).
func (r *Reader) bases(u *unitInfo) dw.Bases {
	return dw.Bases{StrOffsets: u.strOffBase, Addr: u.addrBase, Rnglists: u.rnglistsBase, Loclists: u.loclistsBase,
		GNURanges: r.rangesBase, AddrSet: u.addrBaseSet}
}

// unitRanges reads u's range lists and indexed addresses (dwarf.UnitRanges).
func (r *Reader) unitRanges(u *unitInfo, b *dw.Bases) dw.UnitRanges {
	base := u.lowPC
	if r.gnuSplit4 {
		base = r.splitLowPC
	}
	return dw.UnitRanges{Unit: &u.hdr, Bases: b, Sections: readerSections{r}, Base: base, KeepEmpty: true}
}

// readerSections are the sections a Reader's range lists read: a GNU split
// DWARF 4 child's .debug_ranges and every child's .debug_addr are its
// binary's (newChild).
type readerSections struct{ r *Reader }

func (s readerSections) DebugAddr() []byte     { return s.r.addr }
func (s readerSections) DebugRanges() []byte   { return s.r.ranges }
func (s readerSections) DebugRnglists() []byte { return s.r.rnglists }
