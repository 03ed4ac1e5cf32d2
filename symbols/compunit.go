package symbols

import "github.com/sondedbg/sonde/dwarf"

// CompileUnit describes the compilation unit whose code covers an address:
// what its unit DIE says of the source (the skeleton's, for split DWARF),
// and where the unit is, so that readers of its DIEs (package variables)
// can decode that unit alone.
type CompileUnit struct {
	Name     string // DW_AT_name: the primary source file, as given to the compiler
	CompDir  string // DW_AT_comp_dir: the compilation directory
	Producer string // DW_AT_producer: the compiler and its options
	Version  uint16 // the unit's DWARF version
	Offset   uint64 // of the unit header in .debug_info
}

// CompileUnit returns the compilation unit covering the link-time address
// pc, found through the symbolizer's unit index (.debug_aranges, else the
// units' own ranges). ok is false where no unit covers pc or its unit DIE
// cannot be read.
func (b *Binary) CompileUnit(pc uint64) (u CompileUnit, ok bool) {
	cu := b.dw.unitAt(pc)
	if cu == nil || cu.readUnitDIE() != nil {
		return u, false
	}
	u = CompileUnit{Name: cu.name, CompDir: cu.compDir, Producer: cu.producer, Version: cu.hdr.Version, Offset: cu.hdr.Offset}
	splitUnitNames(cu, &u)
	return u, true
}

// CompileUnits returns every compilation unit of the binary with a name (its
// primary source file, directory and producer), in section order, for
// front ends that list a program's sources. Units whose first DIE cannot be
// read are left out; type and partial units are not compilation units.
func (b *Binary) CompileUnits() []CompileUnit {
	if b.dw == nil {
		return nil
	}
	b.dw.index()
	var out []CompileUnit
	for _, cu := range b.dw.units {
		if cu.hdr.Type != dwarf.UnitCompile && cu.hdr.Type != dwarf.UnitSkeleton {
			continue
		}
		if cu.readUnitDIE() != nil || cu.name == "" {
			continue
		}
		out = append(out, CompileUnit{Name: cu.name, CompDir: cu.compDir, Producer: cu.producer, Version: cu.hdr.Version, Offset: cu.hdr.Offset})
	}
	return out
}
