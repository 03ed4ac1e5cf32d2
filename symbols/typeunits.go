package symbols

import (
	"sync"

	"github.com/sondedbg/sonde/dwarf"
)

// typeUnits indexes a file's type units (DWARF 5 type units in .debug_info,
// DWARF 4 .debug_types) by type signature: a signature leads to its unit and
// type DIE. Symbolization needs it for one thing: the name of a
// class that a unit only declares by signature, when building a qualified
// function name from DIE parents.
type typeUnits struct {
	once  sync.Once
	units map[uint64]*compUnit
	mu    sync.Mutex
	names map[uint64]string
}

func (d *dwarfFile) typeUnit(sig uint64) *compUnit {
	t := &d.types
	t.once.Do(func() {
		t.units = map[uint64]*compUnit{}
		t.names = map[uint64]string{}
		d.index()
		for _, cu := range d.units {
			if cu.hdr.Type == dwarf.UnitType || cu.hdr.Type == dwarf.UnitSplitType {
				t.units[cu.hdr.Signature] = cu
			}
		}
		hdrs, _ := dwarf.ReadUnits(".debug_types", d.section(secTypes), true)
		for _, h := range hdrs {
			t.units[h.Signature] = &compUnit{file: d, hdr: h, inTypes: true}
		}
	})
	return t.units[sig]
}

// typeName returns the DW_AT_name of the type with signature sig ("" when
// unknown).
func (d *dwarfFile) typeName(sig uint64) string {
	cu := d.typeUnit(sig)
	if cu == nil {
		return ""
	}
	t := &d.types
	t.mu.Lock()
	name, ok := t.names[sig]
	t.mu.Unlock()
	if ok {
		return name
	}
	if err := cu.readUnitDIE(); err == nil {
		if ur, err := cu.reader(); err == nil && ur.Seek(cu.hdr.TypeOffset) == nil {
			var e dwarf.Entry
			if ur.Next(&e) == nil {
				if f := e.Field(dwarf.AttrName); f != nil {
					name, _ = cu.str(f)
				}
			}
		}
	}
	t.mu.Lock()
	t.names[sig] = name
	t.mu.Unlock()
	return name
}
