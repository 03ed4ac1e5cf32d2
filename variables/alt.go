package variables

import (
	"debug/dwarf"

	dw "github.com/sondedbg/sonde/dwarf"
)

// A dwz supplementary file (-m, .gnu_debugaltlink) holds the DIEs and
// strings that several binaries share: the binary's units reach its partial
// units with DW_FORM_GNU_ref_alt (types, abstract instances of inlined
// functions, declarations) and its strings with DW_FORM_GNU_strp_alt, as
// Debian's and Fedora's debug packages do. Its units join the Reader's one
// offset space after .debug_info and .debug_types (altBase), so that a
// reference into the supplementary file is an ordinary DIE offset and the
// supplementary file's own references (section offsets in its
// .debug_info) land in its units.

// altSections are the supplementary file's sections a Reader uses.
type altSections struct {
	info, abbrev, str []byte
}

// addAlt appends the units of a dwz supplementary file. A damaged unit ends
// the list; the units before it stay usable, and references past them read
// as missing DIEs.
func (r *Reader) addAlt(s altSections) {
	if len(s.info) == 0 {
		return
	}
	hdrs, _ := dw.ReadUnits(".debug_info", s.info, false)
	if len(hdrs) == 0 {
		return
	}
	r.alt = s
	r.altBase = uint64(len(r.info)) + uint64(len(r.typesSec))
	n := len(r.units)
	r.addUnits(hdrs, false, r.altBase)
	for i := n; i < len(r.units); i++ {
		r.units[i].alt = true
	}
}

// altRef is the Reader-space offset of a DW_FORM_GNU_ref_alt value, or false
// when the Reader has no supplementary file.
func (r *Reader) altRef(v uint64) (dwarf.Offset, bool) {
	if r.alt.info == nil {
		return 0, false
	}
	return dwarf.Offset(r.altBase + v), true
}

// altAbbrevKey keeps the supplementary file's abbreviation tables apart
// from the binary's in Reader.abbrevs (both are keyed by section offset).
const altAbbrevKey = 1 << 63
