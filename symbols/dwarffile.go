package symbols

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/sondedbg/sonde/symbols/internal/dwarfraw"
)

// dwarfSections are the DWARF sections of one file, decompressed. For a .dwo
// file they are its .dwo sections (under the same field names).
type dwarfSections struct {
	info, abbrev, str, strOffsets, lineStr, addr, ranges, rnglists, line, aranges, types []byte
}

// dwarfFile is the DWARF of one file (a binary, its separate debug file, a
// .dwo or .dwp, or a dwz supplementary file) and its lazily built indexes.
type dwarfFile struct {
	name  string
	ef    *elfFile
	sec   dwarfSections
	isDWO bool

	alt      *dwarfFile // dwz supplementary file (DW_FORM_GNU_ref_alt/strp_alt), or nil
	splitDWO *dwoSet    // where skeleton units find their .dwo/.dwp

	indexOnce sync.Once
	indexed   atomic.Bool // index() has completed
	units     []*compUnit // all units of .debug_info, in section order
	cuMap     segmentMap  // address -> index into units
	indexErrs []error     // problems found while indexing (non-fatal)

	abbrevMu sync.Mutex
	abbrevs  map[uint64]*dwarfraw.AbbrevTable

	declMu sync.Mutex
	decls  map[uint64]*fnName // names of DIEs referenced from other units

	warnMu sync.Mutex
	warned map[string]bool
	warns  []error // problems met during lookups, each reported once

	types typeUnits // signature -> type unit, built on first use

	namesOnce sync.Once
	nameIdx   *nameIndex // built by the first name lookup
}

// loadDWARFSections reads the DWARF sections of ef; dwo selects the .dwo names.
func loadDWARFSections(ef *elfFile, dwo bool) (dwarfSections, error) {
	var s dwarfSections
	suffix := ""
	if dwo {
		suffix = ".dwo"
	}
	for _, x := range []struct {
		name string
		dst  *[]byte
	}{
		{".debug_info", &s.info}, {".debug_abbrev", &s.abbrev}, {".debug_str", &s.str},
		{".debug_str_offsets", &s.strOffsets}, {".debug_line_str", &s.lineStr},
		{".debug_addr", &s.addr}, {".debug_ranges", &s.ranges}, {".debug_rnglists", &s.rnglists},
		{".debug_line", &s.line}, {".debug_aranges", &s.aranges}, {".debug_types", &s.types},
	} {
		name := x.name
		if dwo && name != ".debug_addr" && name != ".debug_aranges" && name != ".debug_line_str" {
			name += suffix
		}
		b, err := ef.section(name)
		if err != nil {
			return s, err
		}
		*x.dst = b
	}
	return s, nil
}

func newDWARFFile(ef *elfFile, dwo bool) (*dwarfFile, error) {
	sec, err := loadDWARFSections(ef, dwo)
	if err != nil {
		return nil, err
	}
	return &dwarfFile{name: ef.name, ef: ef, sec: sec, isDWO: dwo,
		abbrevs: map[uint64]*dwarfraw.AbbrevTable{}, decls: map[uint64]*fnName{}}, nil
}

func (d *dwarfFile) hasInfo() bool { return len(d.sec.info) > 0 }

func (d *dwarfFile) fail(op string, err error) error {
	return &Error{File: d.name, Op: op, Err: err}
}

func (d *dwarfFile) abbrevTable(off uint64) (*dwarfraw.AbbrevTable, error) {
	d.abbrevMu.Lock()
	defer d.abbrevMu.Unlock()
	if t, ok := d.abbrevs[off]; ok {
		return t, nil
	}
	t, err := dwarfraw.ParseAbbrevs(".debug_abbrev", d.sec.abbrev, off)
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
		hdrs, err := dwarfraw.ReadUnits(".debug_info", d.sec.info, false)
		if err != nil {
			d.indexErrs = append(d.indexErrs, d.fail("read unit headers", err))
		}
		d.units = make([]*compUnit, len(hdrs))
		byOffset := make(map[uint64]int, len(hdrs))
		for i := range hdrs {
			d.units[i] = &compUnit{file: d, hdr: hdrs[i]}
			byOffset[hdrs[i].Offset] = i
		}
		var spans []span
		covered := make([]bool, len(hdrs))
		if len(d.sec.aranges) > 0 {
			ar, err := dwarfraw.ReadAranges(d.sec.aranges)
			trusted := err == nil
			for _, a := range ar {
				if _, ok := byOffset[a.UnitOffset]; !ok {
					trusted = false
				}
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
			if covered[i] || (cu.hdr.Type != dwarfraw.UnitCompile && cu.hdr.Type != dwarfraw.UnitSkeleton) {
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

// unitAt returns the compile unit covering pc, or nil.
func (d *dwarfFile) unitAt(pc uint64) *compUnit {
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
	ur := dwarfraw.NewUnitReader(".debug_info", d.sec.info, &cu.hdr, ab)
	if err := ur.Seek(off); err != nil {
		return nil, d.fail("resolve name", err)
	}
	var e dwarfraw.Entry
	if err := ur.Next(&e); err != nil {
		return nil, d.fail("resolve name", err)
	}
	di := cu.declOf(&e, "")
	n := &fnName{}
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
