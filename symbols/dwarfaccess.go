package symbols

import "debug/elf"

// Accessors for packages that decode more of the DWARF than this package does
// (variables, types and their locations): they reach the raw sections of the
// file the DWARF was read from, which may be a separate debug file.

// DWARFSection returns the contents of the named section (".debug_info",
// ".debug_loclists", ...) of the file holding the binary's DWARF,
// decompressed; nil when there is no such section or no DWARF at all.
func (b *Binary) DWARFSection(name string) ([]byte, error) {
	if b.dw == nil {
		return nil, nil
	}
	return b.dw.ef.section(name)
}

// DWARFELF returns the ELF headers of the file holding the binary's DWARF (the
// binary itself or its separate debug file); nil without DWARF.
func (b *Binary) DWARFELF() *elf.File {
	if b.dw == nil {
		return nil
	}
	return b.dw.ef.f
}
