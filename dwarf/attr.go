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
	// AddrSet: the DIE names an address base (0 is a valid one where
	// .debug_addr has no header).
	AddrSet bool
}

// UnitBases reads the bases of indexed forms from unit u's first DIE e.
// Where a DWARF 5 unit names none (a .dwo's units carry no base
// attributes) they are just past the sections' headers.
func UnitBases(u *Unit, e *Entry) Bases {
	var b Bases
	if u.Version >= 5 {
		b.StrOffsets, b.Rnglists = 8, 12 // length, version, padding; length, version, address size, segment size, offset count
		if u.Is64 {
			b.StrOffsets, b.Rnglists = 16, 20
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
