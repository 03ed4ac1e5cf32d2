package dwarf

import "fmt"

// SectionSlice is one unit's contribution to a section of a .dwp package.
type SectionSlice struct{ Offset, Size uint64 }

// DWPContribution lists a unit's slices of the package's sections
// (Loclists is .debug_loc.dwo's slice in a version 2 index).
type DWPContribution struct {
	Info, Abbrev, Line, StrOffsets, Rnglists, Loclists SectionSlice
}

// ReadDWPIndex decodes a .debug_cu_index section (GNU version 2 or DWARF 5)
// into DWO id -> contribution.
func ReadDWPIndex(data []byte) (map[uint64]DWPContribution, error) {
	const sec = ".debug_cu_index"
	r := NewCursor(sec, data, 0)
	version := r.U16()
	r.U16() // padding (or the high half of GNU's 32-bit version)
	cols := uint64(r.U32())
	units := uint64(r.U32())
	slots := uint64(r.U32())
	if r.err != nil {
		return nil, r.err
	}
	if version != 2 && version != 5 {
		return nil, &FormatError{sec, 0, fmt.Sprintf("unsupported index version %d", version)}
	}
	if cols == 0 || cols > 16 || units > slots || slots > r.Remaining()/12 {
		return nil, &FormatError{sec, 0, "inconsistent index header"}
	}
	sigs := make([]uint64, slots)
	for i := range sigs {
		sigs[i] = r.U64()
	}
	rows := make([]uint32, slots)
	for i := range rows {
		rows[i] = r.U32()
	}
	ids := make([]uint32, cols)
	for i := range ids {
		ids[i] = r.U32()
	}
	if r.err != nil {
		return nil, r.err
	}
	if units*cols*8 > r.Remaining() {
		return nil, &FormatError{sec, r.off, "offset and size tables truncated"}
	}
	offs := r.off
	sizes := offs + units*cols*4
	cell := func(base, row, col uint64) uint64 {
		c := NewCursor(sec, data, base+(row*cols+col)*4)
		return uint64(c.U32())
	}
	out := make(map[uint64]DWPContribution, units)
	for i := uint64(0); i < slots; i++ {
		row := uint64(rows[i])
		if row == 0 {
			continue
		}
		if row > units {
			return nil, &FormatError{sec, 0, fmt.Sprintf("row %d out of range", row)}
		}
		var c DWPContribution
		for col, id := range ids {
			s := SectionSlice{cell(offs, row-1, uint64(col)), cell(sizes, row-1, uint64(col))}
			switch {
			case id == 1:
				c.Info = s
			case id == 3:
				c.Abbrev = s
			case id == 4:
				c.Line = s
			case id == 6:
				c.StrOffsets = s
			case id == 5: // DW_SECT_LOC (.debug_loc.dwo) in version 2, DW_SECT_LOCLISTS in 5
				c.Loclists = s
			case id == 8 && version == 5:
				c.Rnglists = s
			}
		}
		out[sigs[i]] = c
	}
	return out, nil
}
