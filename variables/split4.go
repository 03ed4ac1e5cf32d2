package variables

import (
	"debug/dwarf"
	"encoding/binary"
	"fmt"
)

// GNU split DWARF 4 (gcc -gsplit-dwarf -gdwarf-4) is the pre-standard form
// of what DWARF 5 made split units: the .dwo's DIEs use GNU forms for
// indexed strings and addresses, its location lists are in .debug_loc.dwo
// with GNU entry kinds, its DW_AT_ranges are offsets into the binary's
// .debug_ranges from the skeleton's DW_AT_GNU_ranges_base, and its
// .debug_addr and .debug_str_offsets have no headers. A child Reader for
// such a unit is marked gnuSplit4 and handled here.

// The GNU forms of split DWARF 4 and their DWARF 5 equivalents, which have
// the same encoding (an unsigned LEB128 index).
const (
	formGNUAddrIndex = 0x1f01 // = DW_FORM_addrx
	formGNUStrIndex  = 0x1f02 // = DW_FORM_strx
	formAddrx        = 0x1b
	formStrx         = 0x1a
	formImplicitCons = 0x21
)

// maxAbbrevs bounds the abbreviations rewriteGNUForms walks.
const maxAbbrevs = 1 << 20

// rewriteGNUForms returns a copy of .debug_abbrev in which the GNU index
// forms are replaced by DW_FORM_addrx and DW_FORM_strx, which the standard
// library decodes. The replacements are written as two-byte LEB128 values,
// so no abbreviation moves and the units' abbreviation offsets stay valid.
// Damaged tables are copied as far as they parse and reported.
func rewriteGNUForms(abbrev []byte) ([]byte, error) {
	out := append([]byte(nil), abbrev...)
	c := cursor{b: out}
	for n := 0; c.off < uint64(len(out)); n++ {
		if n > maxAbbrevs {
			return out, bad("read .debug_abbrev.dwo", 0, "more than %d abbreviations", maxAbbrevs)
		}
		code := c.uleb()
		if c.bad {
			return out, bad("read .debug_abbrev.dwo", 0, "truncated at %#x", c.off)
		}
		if code == 0 {
			continue // the end of one unit's table
		}
		c.uleb() // tag
		c.u8()   // children
		for {
			attr := c.uleb()
			at := c.off
			form := c.uleb()
			if c.bad {
				return out, bad("read .debug_abbrev.dwo", 0, "abbreviation %d truncated", code)
			}
			if attr == 0 && form == 0 {
				break
			}
			switch {
			case form == formImplicitCons:
				c.sleb()
			case (form == formGNUAddrIndex || form == formGNUStrIndex) && c.off-at == 2:
				v := byte(formAddrx)
				if form == formGNUStrIndex {
					v = formStrx
				}
				out[at], out[at+1] = v|0x80, 0
			}
		}
	}
	return out, nil
}

// DWARF 4 split location list entry kinds (DW_LLE_GNU_*, the GNU split
// DWARF proposal, later renumbered by DWARF 5).
const (
	lleGNUEndOfList   = 0
	lleGNUBaseAddress = 1 // index
	lleGNUStartEnd    = 2 // index, index
	lleGNUStartLength = 3 // index, 4-byte length
	lleGNUOffsetPair  = 4 // 4-byte offsets from the base address
	lleGNUViewPair    = 9 // two view numbers (gcc's DW_AT_GNU_locviews), no location
)

// parseLocGNU decodes a location list of .debug_loc.dwo at off (GNU split
// DWARF 4). Expressions have 2-byte lengths, as in .debug_loc.
func (r *Reader) parseLocGNU(u *unitInfo, off uint64) ([]LocListEntry, error) {
	const sec = "read .debug_loc.dwo"
	if off > uint64(len(r.loc)) {
		return nil, bad(sec, 0, "list offset %#x outside the section", off)
	}
	c := cursor{b: r.loc, off: off}
	base := u.lowPC
	var out []LocListEntry
	for n := 0; ; n++ {
		if n > maxListEntries {
			return out, bad(sec, 0, "list at %#x has too many entries", off)
		}
		kind := c.u8()
		var lo, hi uint64
		var err error
		switch kind {
		case lleGNUEndOfList:
			if c.bad {
				return out, bad(sec, 0, "list at %#x runs past the section end", off)
			}
			return out, nil
		case lleGNUBaseAddress:
			if base, err = r.addrx(u, c.uleb()); err != nil {
				return out, err
			}
			continue
		case lleGNUStartEnd:
			if lo, err = r.addrx(u, c.uleb()); err == nil {
				hi, err = r.addrx(u, c.uleb())
			}
		case lleGNUStartLength:
			lo, err = r.addrx(u, c.uleb())
			hi = lo + uint64(c.u32())
		case lleGNUOffsetPair:
			lo = base + uint64(c.u32())
			hi = base + uint64(c.u32())
		case lleGNUViewPair:
			c.uleb()
			c.uleb()
			continue
		default:
			return out, bad(sec, 0, "unknown entry kind %#x at %#x", kind, c.off-1)
		}
		if err != nil {
			return out, err
		}
		expr := c.bytes(uint64(c.u16()))
		if c.bad {
			return out, bad(sec, 0, "list at %#x runs past the section end", off)
		}
		out = append(out, LocListEntry{Lo: lo, Hi: hi, Expr: expr})
	}
}

// rangesOf returns the code ranges of a DIE. A GNU split DWARF 4 unit's
// DW_AT_ranges is read here (the standard library would take it as an
// offset into a .debug_ranges of the .dwo, which has none, and from base
// address 0 instead of the skeleton's DW_AT_low_pc).
func (r *Reader) rangesOf(e *dwarf.Entry) ([][2]uint64, error) {
	if !r.gnuSplit4 {
		return r.d.Ranges(e)
	}
	f := e.AttrField(dwarf.AttrRanges)
	if f == nil {
		return r.d.Ranges(e)
	}
	off, ok := f.Val.(int64)
	if !ok || off < 0 {
		return nil, bad("read ranges", uint64(e.Offset), "DW_AT_ranges of class %v", f.Class)
	}
	return parseRanges(r.ranges, r.rangesBase+uint64(off), r.splitLowPC)
}

// parseRanges decodes a DWARF 2-4 .debug_ranges list at off.
func parseRanges(sec []byte, off, base uint64) ([][2]uint64, error) {
	const op = "read .debug_ranges"
	var out [][2]uint64
	for n := 0; ; n++ {
		if n > maxListEntries {
			return out, bad(op, 0, "list at %#x has too many entries", off)
		}
		if off > uint64(len(sec)) || uint64(len(sec))-off < 16 {
			return out, bad(op, 0, "list at %#x runs past the section end", off)
		}
		lo := binary.LittleEndian.Uint64(sec[off:])
		hi := binary.LittleEndian.Uint64(sec[off+8:])
		off += 16
		switch {
		case lo == 0 && hi == 0:
			return out, nil
		case lo == ^uint64(0):
			base = hi
		case hi > lo:
			out = append(out, [2]uint64{base + lo, base + hi})
		}
	}
}

// unitVersion reads the version of the first unit of a .debug_info section.
func unitVersion(info []byte) (int, error) {
	if len(info) < 6 {
		return 0, fmt.Errorf("%w: .debug_info of %d bytes", ErrBadDWARF, len(info))
	}
	p := 4
	if binary.LittleEndian.Uint32(info) == 0xffffffff {
		p = 12
		if len(info) < 14 {
			return 0, fmt.Errorf("%w: truncated 64-bit unit header", ErrBadDWARF)
		}
	}
	return int(binary.LittleEndian.Uint16(info[p:])), nil
}
