package dwarf

import (
	"errors"
	"fmt"
)

// Attribute values that a DIE does not hold itself: the symbolizer (package
// symbols) keeps fields undecoded and resolves a name when one is asked
// for; the variables reader resolves a DIE's fields when it reads the DIE.
// Both resolve them here, from the unit's bases and sections.

// Bases are where a unit's indexed forms count from: its unit DIE's
// DW_AT_str_offsets_base, DW_AT_addr_base (or DW_AT_GNU_addr_base),
// DW_AT_rnglists_base, DW_AT_loclists_base and DW_AT_GNU_ranges_base.
type Bases struct {
	StrOffsets, Addr, Rnglists, Loclists, GNURanges uint64
	// AddrSet: the DIE names an address base (a split unit, which names
	// none, takes its skeleton's).
	AddrSet bool
}

// UnitBases reads the bases of indexed forms from unit u's first DIE e.
// Where a DWARF 5 unit names none (a .dwo's units carry no base
// attributes) they are just past the sections' headers: for
// .debug_str_offsets and .debug_rnglists as DWARF 5 (7.26, 7.28) has the
// one contribution of a .dwo start; for .debug_addr (7.27), whose entries
// DW_AT_addr_base points to past its 8-byte header (16 in 64-bit DWARF),
// the same, so that a unit without the attribute reads the first
// contribution's entries and not its header. (gdb and elfutils take 0 there,
// reading the header's length and version as the first address; LLVM
// resolves nothing.) A DWARF 4 unit's bases are 0: the GNU .debug_addr of
// split DWARF 4 has no header.
func UnitBases(u *Unit, e *Entry) Bases {
	var b Bases
	if u.Version >= 5 {
		// length, version, padding; length, version, address and segment
		// sizes; the same and an offset count.
		b.StrOffsets, b.Addr, b.Rnglists = 8, 8, 12
		if u.Is64 {
			b.StrOffsets, b.Addr, b.Rnglists = 16, 16, 20
		}
	}
	for _, f := range e.Fields {
		switch f.Attr {
		case AttrStrOffsetsBase:
			b.StrOffsets = f.Val
		case AttrAddrBase, AttrGNUAddrBase:
			b.Addr, b.AddrSet = f.Val, true
		case AttrRnglistsBase:
			b.Rnglists = f.Val
		case AttrLoclistsBase:
			b.Loclists = f.Val
		case AttrGNURangesBase:
			b.GNURanges = f.Val
		}
	}
	return b
}

// StrSection names a section string attributes point into.
type StrSection uint8

const (
	StrUnit    StrSection = iota // the unit's own section (DW_FORM_string)
	StrStr                       // .debug_str (DW_FORM_strp, and where strx's offsets point)
	StrLineStr                   // .debug_line_str
	StrOffsets                   // .debug_str_offsets
	StrAlt                       // the supplementary (dwz) file's .debug_str
)

// ErrNoAltStrings: a string is in a dwz supplementary file the reader has not
// found.
var ErrNoAltStrings = errors.New("string in a dwz supplementary file that was not found")

// String resolves a string-class field of a DIE of unit u (in section
// unitSec) whose .debug_str_offsets contribution starts at strOffBase. sec
// returns each section when it is first needed (readers map or inflate
// them lazily); nil for StrAlt when there is no supplementary file.
func String(f *Field, u *Unit, unitSec string, strOffBase uint64, sec func(StrSection) []byte) (string, error) {
	switch f.Class {
	case ClassString:
		return CString(unitSec, sec(StrUnit), f.Val)
	case ClassStrp:
		return CString(".debug_str", sec(StrStr), f.Val)
	case ClassLineStrp:
		return CString(".debug_line_str", sec(StrLineStr), f.Val)
	case ClassStrx:
		off, err := StrOffset(sec(StrOffsets), strOffBase, f.Val, u.Is64)
		if err != nil {
			return "", err
		}
		return CString(".debug_str", sec(StrStr), off)
	case ClassStrpAlt:
		alt := sec(StrAlt)
		if alt == nil {
			return "", ErrNoAltStrings
		}
		return CString(".debug_str", alt, f.Val)
	}
	return "", fmt.Errorf("attribute %#x is not a string", f.Attr)
}

// RangeSections gives the sections a unit's range lists read, each when
// first needed (readers map or inflate them lazily).
type RangeSections interface {
	DebugAddr() []byte     // a split unit's: its skeleton's
	DebugRanges() []byte   // a GNU split DWARF 4 unit's: its skeleton's file's
	DebugRnglists() []byte // the unit's own file's
}

// UnitRanges decodes the range lists of one unit's DIEs and its indexed
// addresses: the one reading of DW_AT_ranges and DW_FORM_addrx for the
// symbolizer and the variables reader.
type UnitRanges struct {
	Unit     *Unit
	Bases    *Bases // Addr and GNURanges as the unit resolves them: a split unit's are its skeleton's
	Sections RangeSections
	// Base is the unit's base address (a split unit without DW_AT_low_pc:
	// its skeleton's).
	Base uint64
	// KeepEmpty keeps empty ranges (RangesV4All, RnglistAll).
	KeepEmpty bool
}

// Addrx reads entry i of the unit's .debug_addr contribution.
func (ur *UnitRanges) Addrx(i uint64) (uint64, error) {
	return AddrAt(ur.Sections.DebugAddr(), ur.Bases.Addr, i, ur.Unit.AddrSize)
}

// List appends the ranges of the range list a DW_AT_ranges whose value is v
// names: an index into the unit's offsets when indexed (DW_FORM_rnglistx),
// else an offset into .debug_rnglists (DWARF 5) or into .debug_ranges
// counted from Bases.GNURanges (DW_AT_GNU_ranges_base; 0 but in a GNU split
// DWARF 4 unit).
func (ur *UnitRanges) List(v uint64, indexed bool, dst []Range) ([]Range, error) {
	u := ur.Unit
	switch {
	case indexed:
		sec := ur.Sections.DebugRnglists()
		off, err := RnglistOffset(sec, ur.Bases.Rnglists, v, u.Is64)
		if err != nil {
			return dst, err
		}
		return rnglist(sec, off, u.AddrSize, ur.Base, ur.Addrx, dst, ur.KeepEmpty)
	case u.Version >= 5:
		return rnglist(ur.Sections.DebugRnglists(), v, u.AddrSize, ur.Base, ur.Addrx, dst, ur.KeepEmpty)
	}
	return rangesV4(ur.Sections.DebugRanges(), v+ur.Bases.GNURanges, u.AddrSize, ur.Base, dst, ur.KeepEmpty)
}
