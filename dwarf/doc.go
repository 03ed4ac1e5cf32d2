// Package dwarf is the module's one DWARF reader. It decodes the sections
// directly from their bytes through one bounds-checked cursor: unit headers
// (DWARF 2 to 5, 32- and 64-bit), abbreviation tables with every standard
// and GNU form (split DWARF's GNU_addr_index and GNU_str_index, dwz's
// GNU_ref_alt and GNU_strp_alt), DIEs, range lists (.debug_ranges and
// .debug_rnglists), location lists (.debug_loc, .debug_loclists and GNU
// split DWARF 4's .debug_loc.dwo), line-number programs, split units (.dwo)
// and type units, and DWP package indexes.
//
// The symbolizer (package symbols) and the variables reader (package
// variables) both use it; nothing in the module uses the standard
// library's debug/dwarf reader, which cannot read GNU split forms, allocates
// an Entry per DIE and parses every unit's abbreviations up front.
//
// The low-level calls (ReadUnitHeader, ParseAbbrevs, UnitReader, Rnglist...)
// are pure functions of byte slices: no state is shared, so callers may
// decode different units from different goroutines. Malformed input yields
// a *FormatError that names the section and offset; nothing panics, and
// every loop is bounded by the input size.
package dwarf
