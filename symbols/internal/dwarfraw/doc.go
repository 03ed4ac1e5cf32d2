// Package dwarfraw decodes the DWARF sections the symbolizer needs, directly
// from their bytes: unit headers, abbreviation tables, DIEs, range lists and
// line-number programs, for DWARF 2 to 5, including the split-DWARF forms
// (.dwo units read with the skeleton's string-offset and address bases).
//
// It exists because the standard library's debug/dwarf cannot read split DWARF
// or DWARF 5 type-unit references, allocates an Entry per DIE, and is not
// documented as safe for concurrent use. Everything here is a pure function of
// byte slices: no state is shared, so callers may decode different units from
// different goroutines. Malformed input yields an error that names the section
// and offset; nothing panics, every loop is bounded by the input size.
package dwarfraw
