package symbols

import (
	"debug/elf"
	"errors"
)

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

// SplitUnit is the DWARF of one split compile unit (-gsplit-dwarf): the
// sections of its .dwo file and what its skeleton unit in the binary says.
type SplitUnit struct {
	// DWOPath is the .dwo (or .dwp) file the sections come from.
	DWOPath string
	// Sections are the unit's .dwo sections by their plain names
	// (".debug_info", ".debug_abbrev", ".debug_str", ".debug_str_offsets",
	// ".debug_loclists", ".debug_rnglists", ".debug_line"; DWARF 4 units
	// have ".debug_loc", GNU's pre-standard format, instead of
	// ".debug_loclists", and ".debug_types", the type units of a .dwo
	// concatenated), decompressed; for a .dwp, the unit's contributions.
	Sections map[string][]byte
	// AddrBase is the skeleton's DW_AT_addr_base (DW_AT_GNU_addr_base in
	// DWARF 4): where the unit's entries start in the binary's .debug_addr.
	AddrBase uint64
	// RangesBase is a DWARF 4 skeleton's DW_AT_GNU_ranges_base: the split
	// unit's DW_AT_ranges are offsets from it into the binary's .debug_ranges.
	RangesBase uint64
	// Ranges are the unit's link-time code ranges, LowPC its base address
	// (from the skeleton).
	Ranges [][2]uint64
	LowPC  uint64
}

// SplitUnits returns the split compile units of the binary, opening their
// .dwo files or .dwp package. Units whose DWARF cannot be found are skipped
// (Warnings says which); err reports damaged parts, alongside the units that
// could be read.
func (b *Binary) SplitUnits() ([]SplitUnit, error) {
	if b.dw == nil {
		return nil, nil
	}
	b.dw.index()
	var out []SplitUnit
	var errs []error
	for _, cu := range b.dw.units {
		if err := cu.readUnitDIE(); err != nil || !cu.isSkeleton() {
			continue
		}
		split, err := cu.dieUnit()
		if err != nil || split == nil || split == cu {
			if err != nil {
				b.dw.warnOnce(err)
			}
			continue
		}
		// The split unit's view of its file: a .dwo, or its slices of a .dwp
		// package (location lists, which the symbols layer does not read,
		// are sliced here from the package index).
		sec := split.file.sec
		su := SplitUnit{DWOPath: split.file.name, AddrBase: cu.addrBase, RangesBase: cu.rangesBase, LowPC: cu.lowPC, Sections: map[string][]byte{
			".debug_info": sec.info, ".debug_abbrev": sec.abbrev, ".debug_str": sec.str,
			".debug_str_offsets": sec.strOffsets, ".debug_rnglists": sec.rnglists, ".debug_line": sec.line,
		}}
		locName := ".debug_loclists"
		if split.hdr.Version < 5 {
			locName = ".debug_loc" // GNU split DWARF 4: DW_LLE_GNU_* entries
		}
		loc, err := split.file.ef.section(locName + ".dwo")
		if err != nil {
			errs = append(errs, err)
		}
		if set := b.dw.splitDWO; set != nil && set.dwp != nil && split.file.ef == set.dwp.file.ef {
			c := set.dwp.entries[cu.dwoID].Loclists
			if c.Size != 0 || c.Offset != 0 {
				if c.Offset > uint64(len(loc)) || c.Size > uint64(len(loc))-c.Offset {
					errs = append(errs, &Error{File: split.file.name, Op: "read " + locName + ".dwo", Err: errors.New("contribution outside the section")})
					loc = nil
				} else {
					loc = loc[c.Offset : c.Offset+c.Size]
				}
			}
		}
		su.Sections[locName] = loc
		if split.hdr.Version < 5 && (b.dw.splitDWO == nil || b.dw.splitDWO.dwp == nil || split.file.ef != b.dw.splitDWO.dwp.file.ef) {
			// DWARF 4 type units (-fdebug-types-section) of a .dwo: one
			// COMDAT section per unit. (A .dwp's are indexed by
			// .debug_tu_index, which is not read here.)
			types, err := split.file.ef.allSections(".debug_types.dwo")
			if err != nil {
				errs = append(errs, err)
			}
			su.Sections[".debug_types"] = types
		}
		for _, r := range cu.ranges {
			su.Ranges = append(su.Ranges, [2]uint64{r.Lo, r.Hi})
		}
		out = append(out, su)
	}
	return out, errors.Join(errs...)
}

// allSections returns the contents of every section named name,
// concatenated (COMDAT groups give each type unit a section of its own).
func (e *elfFile) allSections(name string) ([]byte, error) {
	var out []byte
	n := 0
	for i, s := range e.f.Sections {
		if s.Name != name {
			continue
		}
		b, err := e.sectionAt(i)
		if err != nil {
			return out, err
		}
		if n++; n == 1 {
			out = b // one section: no copy
			continue
		}
		if n == 2 {
			out = append([]byte(nil), out...)
		}
		out = append(out, b...)
	}
	return out, nil
}
