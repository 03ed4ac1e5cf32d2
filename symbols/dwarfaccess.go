package symbols

import (
	"debug/elf"
	"errors"
	"strings"
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
	// DWOPath is the .dwo file the sections come from.
	DWOPath string
	// Sections are the .dwo's sections by their plain names (".debug_info",
	// ".debug_abbrev", ".debug_str", ".debug_str_offsets",
	// ".debug_loclists", ".debug_rnglists", ".debug_line"), decompressed.
	Sections map[string][]byte
	// AddrBase is the skeleton's DW_AT_addr_base: where the unit's entries
	// start in the binary's .debug_addr.
	AddrBase uint64
	// Ranges are the unit's link-time code ranges, LowPC its base address
	// (from the skeleton).
	Ranges [][2]uint64
	LowPC  uint64
}

// SplitUnits returns the split compile units of the binary, opening their
// .dwo files. Units whose .dwo cannot be found are skipped (Warnings says
// which); units in a .dwp package are reported as unsupported by err,
// alongside the units that could be read.
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
		if strings.HasSuffix(split.file.name, ".dwp") {
			errs = append(errs, &Error{File: split.file.name, Op: "read split unit", Err: errors.New("variables in .dwp packages are not supported")})
			continue
		}
		su := SplitUnit{DWOPath: split.file.name, Sections: map[string][]byte{}, AddrBase: cu.addrBase, LowPC: cu.lowPC}
		for _, name := range []string{".debug_info", ".debug_abbrev", ".debug_str", ".debug_str_offsets",
			".debug_loclists", ".debug_rnglists", ".debug_line"} {
			data, err := split.file.ef.section(name + ".dwo")
			if err != nil {
				errs = append(errs, err)
			}
			su.Sections[name] = data
		}
		for _, r := range cu.ranges {
			su.Ranges = append(su.Ranges, [2]uint64{r.Lo, r.Hi})
		}
		out = append(out, su)
	}
	return out, errors.Join(errs...)
}
