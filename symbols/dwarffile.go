package symbols

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/sondedbg/sonde/dwarf"
)

// sectionID names one of the DWARF sections the symbols package reads.
type sectionID uint8

const (
	secInfo sectionID = iota
	secAbbrev
	secStr
	secStrOffsets
	secLineStr
	secAddr
	secRanges
	secRnglists
	secLine
	secAranges
	secTypes
	numSections
)

var sectionNames = [numSections]string{
	".debug_info", ".debug_abbrev", ".debug_str", ".debug_str_offsets", ".debug_line_str",
	".debug_addr", ".debug_ranges", ".debug_rnglists", ".debug_line", ".debug_aranges", ".debug_types",
}

// dwarfSections are DWARF sections read in full at open. Only split-DWARF
// files use them (.dwo files and the per-unit views of a .dwp package: small,
// and the variables layer reads them through SplitUnits); every other file
// reads its sections on first use (dwarfFile.section).
type dwarfSections struct {
	info, abbrev, str, strOffsets, lineStr, addr, ranges, rnglists, line, aranges, types []byte
}

// field returns the section id of s.
func (s *dwarfSections) field(id sectionID) []byte {
	switch id {
	case secInfo:
		return s.info
	case secAbbrev:
		return s.abbrev
	case secStr:
		return s.str
	case secStrOffsets:
		return s.strOffsets
	case secLineStr:
		return s.lineStr
	case secAddr:
		return s.addr
	case secRanges:
		return s.ranges
	case secRnglists:
		return s.rnglists
	case secLine:
		return s.line
	case secAranges:
		return s.aranges
	case secTypes:
		return s.types
	}
	return nil
}

// sectionName returns the name of section id in a file (the .dwo name when dwo).
func sectionName(id sectionID, dwo bool) string {
	name := sectionNames[id]
	if dwo && id != secAddr && id != secAranges && id != secLineStr {
		name += ".dwo"
	}
	return name
}

// loadDWARFSections reads every DWARF section of a split-DWARF file.
func loadDWARFSections(ef *elfFile, dwo bool) (dwarfSections, error) {
	var s dwarfSections
	for id, dst := range []*[]byte{&s.info, &s.abbrev, &s.str, &s.strOffsets, &s.lineStr,
		&s.addr, &s.ranges, &s.rnglists, &s.line, &s.aranges, &s.types} {
		b, err := ef.section(sectionName(sectionID(id), dwo))
		if err != nil {
			return s, err
		}
		*dst = b
	}
	return s, nil
}

// dwarfFile is the DWARF of one file (a binary, its separate debug file, a
// .dwo or .dwp, or a dwz supplementary file) and its lazily built indexes.
type dwarfFile struct {
	name  string
	ef    *elfFile
	isDWO bool
	// Split-DWARF files hold their sections in sec (eager); the others
	// find them through secIdx, by ELF section index, read on first use.
	eager  bool
	sec    dwarfSections
	secIdx [numSections]int

	alt      *dwarfFile // dwz supplementary file (DW_FORM_GNU_ref_alt/strp_alt), or nil
	splitDWO *dwoSet    // where skeleton units find their .dwo/.dwp

	indexOnce sync.Once
	indexed   atomic.Bool // index() has completed
	// funcTrees counts the functions decoded one at a time (funcscopes.go)
	funcTrees atomic.Int32
	units     []*compUnit // all units of .debug_info, in section order
	cuMap     segmentMap  // address -> index into units
	indexErrs []error     // problems found while indexing (non-fatal)

	abbrevMu sync.Mutex
	abbrevs  map[uint64]*dwarf.AbbrevTable

	declMu sync.Mutex
	decls  map[uint64]*fnName // names of DIEs referenced from other units

	warnMu sync.Mutex
	warned map[string]bool
	warns  []error // problems met during lookups, each reported once

	types typeUnits // signature -> type unit, built on first use

	namesOnce sync.Once
	nameIdx   *nameIndex // built by the first name lookup
}

// newDWARFFile locates the DWARF sections of ef. A split-DWARF file (dwo)
// is read in full; any other is only indexed: nothing is read or inflated
// before a lookup needs it.
func newDWARFFile(ef *elfFile, dwo bool) (*dwarfFile, error) {
	d := &dwarfFile{name: ef.name, ef: ef, isDWO: dwo, eager: dwo,
		abbrevs: map[uint64]*dwarf.AbbrevTable{}, decls: map[uint64]*fnName{}}
	if dwo {
		sec, err := loadDWARFSections(ef, dwo)
		if err != nil {
			return nil, err
		}
		d.sec = sec
		return d, nil
	}
	for id := range d.secIdx {
		d.secIdx[id] = ef.sectionIndex(sectionName(sectionID(id), false))
	}
	return d, nil
}

// section returns the contents of a DWARF section, reading (inflating) it
// on first use; nil when absent or unreadable (the problem is reported
// once among the warnings, and lookups see a file without that section).
func (d *dwarfFile) section(id sectionID) []byte {
	if d.eager {
		return d.sec.field(id)
	}
	b, err := d.ef.sectionAt(d.secIdx[id])
	if err != nil {
		d.warnOnce(err)
		return nil
	}
	return b
}

// hasInfo reports whether the file has a non-empty .debug_info, from the
// section headers alone.
func (d *dwarfFile) hasInfo() bool {
	if d.eager {
		return len(d.sec.info) > 0
	}
	i := d.secIdx[secInfo]
	return i >= 0 && d.ef.declaredSize(d.ef.f.Sections[i]) > 0
}

func (d *dwarfFile) fail(op string, err error) error {
	return &Error{File: d.name, Op: op, Err: err}
}

func (d *dwarfFile) abbrevTable(off uint64) (*dwarf.AbbrevTable, error) {
	d.abbrevMu.Lock()
	defer d.abbrevMu.Unlock()
	if t, ok := d.abbrevs[off]; ok {
		return t, nil
	}
	t, err := dwarf.ParseAbbrevs(".debug_abbrev", d.section(secAbbrev), off)
	if err != nil {
		return nil, err
	}
	d.abbrevs[off] = t
	return t, nil
}

// index builds the address -> compile unit map once. It reads unit headers,
// .debug_aranges, and the first DIE of units that aranges does not cover.
func (d *dwarfFile) index() {
	d.indexOnce.Do(func() {
		if d.loadIndex() {
			d.indexed.Store(true)
			d.persistIndex(false)
			return
		}
		defer d.persistIndex(true)
		hdrs, err := dwarf.ReadUnits(".debug_info", d.section(secInfo), false)
		if err != nil {
			d.indexErrs = append(d.indexErrs, d.fail("read unit headers", err))
		}
		d.units = make([]*compUnit, len(hdrs))
		all := make([]compUnit, len(hdrs)) // one allocation for every unit
		byOffset := make(map[uint64]int, len(hdrs))
		for i := range hdrs {
			all[i].file, all[i].hdr = d, hdrs[i]
			d.units[i] = &all[i]
			byOffset[hdrs[i].Offset] = i
		}
		var spans []span
		covered := make([]bool, len(hdrs))
		if len(d.section(secAranges)) > 0 {
			ar, sets, err := dwarf.ReadArangeSets(d.section(secAranges))
			trusted := err == nil
			for _, a := range ar {
				if _, ok := byOffset[a.UnitOffset]; !ok {
					trusted = false
				}
			}
			// A unit with a set has its code there, none when the set is
			// empty (libc: 252 data-only units of 4,126): its DIE is not
			// read for ranges (arangesets.go).
			if trusted {
				markArangeSets(covered, sets, byOffset)
			}
			if err != nil {
				d.indexErrs = append(d.indexErrs, d.fail("read .debug_aranges (ignored)", err))
			}
			if trusted {
				for _, a := range ar {
					i := byOffset[a.UnitOffset]
					if usableRange(a.Lo, a.Hi) {
						spans = append(spans, span{a.Lo, a.Hi, int32(i), 0})
						covered[i] = true
					}
				}
			}
		}
		for i, cu := range d.units {
			if covered[i] || (cu.hdr.Type != dwarf.UnitCompile && cu.hdr.Type != dwarf.UnitSkeleton) {
				continue
			}
			if err := cu.readUnitDIE(); err != nil {
				d.indexErrs = append(d.indexErrs, err)
				continue
			}
			for _, r := range cu.ranges {
				if usableRange(r.Lo, r.Hi) {
					spans = append(spans, span{r.Lo, r.Hi, int32(i), 0})
				}
			}
		}
		d.cuMap = buildSegments(spans)
		d.indexed.Store(true)
	})
}

// usableRange drops empty ranges and those of code the linker discarded
// (which keep address 0 or a tombstone value).
func usableRange(lo, hi uint64) bool {
	return hi > lo && lo != 0 && lo < ^uint64(0)-1
}

// unitAt returns the compile unit covering pc, or nil (none in a binary
// without DWARF: d nil).
func (d *dwarfFile) unitAt(pc uint64) *compUnit {
	if d == nil {
		return nil
	}
	d.index()
	i := d.cuMap.find(pc)
	if i < 0 || int(i) >= len(d.units) {
		return nil
	}
	return d.units[i]
}

// unitContaining returns the unit whose DIEs include section offset off.
func (d *dwarfFile) unitContaining(off uint64) *compUnit {
	d.index()
	i := sort.Search(len(d.units), func(i int) bool { return d.units[i].hdr.End > off })
	if i >= len(d.units) || off < d.units[i].hdr.DataOffset {
		return nil
	}
	return d.units[i]
}

// nameAt resolves the function name of the DIE at off in d's .debug_info
// when it lies in another unit than the referring one (LTO, dwz partial
// units): the qualified prefix from DIE parents is not available there.
func (d *dwarfFile) nameAt(off uint64, hops int) (*fnName, error) {
	d.declMu.Lock()
	if n, ok := d.decls[off]; ok {
		d.declMu.Unlock()
		return n, nil
	}
	d.declMu.Unlock()
	cu := d.unitContaining(off)
	if cu == nil {
		return nil, d.fail("resolve name", fmt.Errorf("DIE offset %#x is in no unit", off))
	}
	if err := cu.readUnitDIE(); err != nil {
		return nil, err
	}
	ab, err := d.abbrevTable(cu.hdr.AbbrevOff)
	if err != nil {
		return nil, d.fail("resolve name", err)
	}
	ur := dwarf.NewUnitReader(".debug_info", d.section(secInfo), &cu.hdr, ab)
	if err := ur.Seek(off); err != nil {
		return nil, d.fail("resolve name", err)
	}
	var e dwarf.Entry
	if err := ur.Next(&e); err != nil {
		return nil, d.fail("resolve name", err)
	}
	di := cu.declOf(&e, 0)
	n := &fnName{names: d.nameStore()}
	cu.fillName(n, di, nil, hops)
	d.declMu.Lock()
	d.decls[off] = n
	d.declMu.Unlock()
	return n, nil
}

// warnOnce records a lookup-time problem (a missing .dwo, say) once.
func (d *dwarfFile) warnOnce(err error) {
	d.warnMu.Lock()
	defer d.warnMu.Unlock()
	if d.warned == nil {
		d.warned = map[string]bool{}
	}
	if msg := err.Error(); !d.warned[msg] {
		d.warned[msg] = true
		d.warns = append(d.warns, err)
	}
}
