package symbols

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sondedbg/sonde/dwarf"
)

// compUnit is one unit of .debug_info with what its first DIE says, and its
// lazily decoded scope tree and line table.
type compUnit struct {
	file     *dwarfFile
	hdr      dwarf.Unit
	skeleton *compUnit // set on split units: the skeleton that holds addresses and lines
	inTypes  bool      // a DWARF 4 type unit of .debug_types

	dieOnce      sync.Once
	dieErr       error
	name         string
	compDir      string
	producer     string // DW_AT_producer
	lowPC        uint64
	hasLowPC     bool
	ranges       []dwarf.Range
	strOffBase   uint64
	addrBase     uint64
	rnglistsBase uint64
	rangesBase   uint64 // DW_AT_GNU_ranges_base (DWARF 4 split units: the skeleton's, which only its split unit's DIEs apply)
	stmtList     uint64
	hasStmtList  bool
	dwoName      string
	dwoID        uint64

	splitOnce sync.Once
	split     *compUnit
	splitErr  error

	scopesOnce sync.Once
	scopes     *scopeTree
	scopesErr  error

	linesOnce sync.Once
	lines     *lineTable
	linesErr  error

	fast atomic.Pointer[unitLookup] // set once scopes and lines are decoded

	funcsOnce sync.Once // a large unit's function index (funcscopes.go)
	funcs     atomic.Pointer[funcScopes]
	part      atomic.Pointer[partLookup] // set once a function of it is decoded

	callsOnce sync.Once // call sites (callsite.go)
	calls     *unitCallSites
}

func (cu *compUnit) secName() string {
	name := ".debug_info"
	if cu.inTypes {
		name = ".debug_types"
	}
	if cu.file.isDWO {
		name += ".dwo"
	}
	return name
}

// data returns the section holding the unit.
func (cu *compUnit) data() []byte {
	if cu.inTypes {
		return cu.file.section(secTypes)
	}
	return cu.file.section(secInfo)
}

func (cu *compUnit) fail(op string, err error) error {
	return &Error{File: cu.file.name, Op: fmt.Sprintf("%s (unit at %#x)", op, cu.hdr.Offset), Err: err}
}

func (cu *compUnit) reader() (*dwarf.UnitReader, error) {
	ab, err := cu.file.abbrevTable(cu.hdr.AbbrevOff)
	if err != nil {
		return nil, cu.fail("read abbreviations", err)
	}
	return dwarf.NewUnitReader(cu.secName(), cu.data(), &cu.hdr, ab), nil
}

// readUnitDIE decodes the unit's first DIE once: its name, directories,
// address ranges, the bases of indexed forms, and split-DWARF links.
func (cu *compUnit) readUnitDIE() error {
	cu.dieOnce.Do(func() { cu.dieErr = cu.decodeUnitDIE() })
	return cu.dieErr
}

func (cu *compUnit) decodeUnitDIE() error {
	ur, err := cu.reader()
	if err != nil {
		return err
	}
	var e dwarf.Entry
	if err := ur.Next(&e); err != nil {
		return cu.fail("read unit DIE", err)
	}
	// Bases first: other attributes of this DIE may use indexed forms.
	b := dwarf.UnitBases(&cu.hdr, &e)
	cu.strOffBase, cu.addrBase, cu.rnglistsBase, cu.rangesBase = b.StrOffsets, b.Addr, b.Rnglists, b.GNURanges
	if cu.skeleton != nil {
		// A split unit's addresses live in the skeleton's .debug_addr.
		if err := cu.skeleton.readUnitDIE(); err != nil {
			return err
		}
		cu.addrBase = cu.skeleton.addrBase
		cu.rangesBase = cu.skeleton.rangesBase
	}
	cu.dwoID = cu.hdr.Signature
	for i := range e.Fields {
		f := &e.Fields[i]
		switch f.Attr {
		case dwarf.AttrName:
			cu.name, _ = cu.str(f)
		case dwarf.AttrCompDir:
			cu.compDir, _ = cu.str(f)
		case dwarf.AttrProducer:
			cu.producer, _ = cu.str(f)
		case dwarf.AttrLowPC:
			if v, err := cu.addr(f); err == nil {
				cu.lowPC, cu.hasLowPC = v, true
			}
		case dwarf.AttrStmtList:
			cu.stmtList, cu.hasStmtList = f.Val, true
		case dwarf.AttrDwoName, dwarf.AttrGNUDwoName:
			cu.dwoName, _ = cu.str(f)
		case dwarf.AttrGNUDwoID:
			cu.dwoID = f.Val
		}
	}
	if cu.skeleton != nil && !cu.hasLowPC {
		cu.lowPC = cu.skeleton.lowPC
	}
	cu.ranges, err = cu.rangesOf(&e, nil)
	if err != nil {
		return cu.fail("read unit ranges", err)
	}
	return nil
}

func (cu *compUnit) isSkeleton() bool {
	return cu.hdr.Type == dwarf.UnitSkeleton || (cu.dwoName != "" && cu.skeleton == nil)
}

// str resolves a string-class attribute.
func (cu *compUnit) str(f *dwarf.Field) (string, error) {
	return dwarf.String(f, &cu.hdr, cu.secName(), cu.strOffBase, cu.strSection)
}

// strSection returns a section the unit's strings point into.
func (cu *compUnit) strSection(s dwarf.StrSection) []byte {
	d := cu.file
	switch s {
	case dwarf.StrUnit:
		return cu.data()
	case dwarf.StrStr:
		return d.section(secStr)
	case dwarf.StrLineStr:
		return d.section(secLineStr)
	case dwarf.StrOffsets:
		return d.section(secStrOffsets)
	case dwarf.StrAlt:
		if d.alt != nil {
			return d.alt.section(secStr)
		}
	}
	return nil
}

// addrSection returns the .debug_addr that indexed addresses use.
func (cu *compUnit) addrSection() []byte {
	if cu.skeleton != nil {
		return cu.skeleton.file.section(secAddr)
	}
	return cu.file.section(secAddr)
}

// addrx reads entry i of the unit's .debug_addr contribution.
func (cu *compUnit) addrx(i uint64) (uint64, error) {
	b := cu.bases()
	ur := dwarf.UnitRanges{Unit: &cu.hdr, Bases: &b, Sections: unitSections{cu}}
	return ur.Addrx(i)
}

// addr resolves an address-class attribute.
func (cu *compUnit) addr(f *dwarf.Field) (uint64, error) {
	switch f.Class {
	case dwarf.ClassAddress:
		return f.Val, nil
	case dwarf.ClassAddrx:
		return cu.addrx(f.Val)
	}
	return 0, fmt.Errorf("attribute %#x is not an address", f.Attr)
}

// rangesOf returns the code ranges of a DIE (DW_AT_low_pc/high_pc or
// DW_AT_ranges), appended to dst; none when it has neither.
func (cu *compUnit) rangesOf(e *dwarf.Entry, dst []dwarf.Range) ([]dwarf.Range, error) {
	var low, high, rng *dwarf.Field
	for i := range e.Fields {
		switch e.Fields[i].Attr {
		case dwarf.AttrLowPC:
			low = &e.Fields[i]
		case dwarf.AttrHighPC:
			high = &e.Fields[i]
		case dwarf.AttrRanges:
			rng = &e.Fields[i]
		}
	}
	if rng != nil {
		return cu.rangeList(rng, dst)
	}
	if low == nil || high == nil {
		return dst, nil
	}
	lo, err := cu.addr(low)
	if err != nil {
		return dst, err
	}
	var hi uint64
	switch high.Class {
	case dwarf.ClassConst, dwarf.ClassSConst:
		hi = lo + high.Val
	default:
		if hi, err = cu.addr(high); err != nil {
			return dst, err
		}
	}
	if hi > lo {
		dst = append(dst, dwarf.Range{Lo: lo, Hi: hi})
	}
	return dst, nil
}

func (cu *compUnit) rangeList(f *dwarf.Field, dst []dwarf.Range) ([]dwarf.Range, error) {
	b := cu.bases()
	ur := dwarf.UnitRanges{Unit: &cu.hdr, Bases: &b, Sections: unitSections{cu}, Base: cu.lowPC}
	return ur.List(f.Val, f.Class == dwarf.ClassRnglistx, dst)
}

// bases are the unit's bases of indexed forms as its DIEs resolve them (a
// split unit's addresses and DWARF 4 ranges: its skeleton's). A GNU split
// DWARF 4 unit's DW_AT_ranges count from its skeleton's
// DW_AT_GNU_ranges_base; the skeleton's own DW_AT_ranges (a unit in
// several ranges: hot and cold code) is an offset of its own, as gdb and
// elfutils read it and as GCC writes it (TestSplitDWARF4SkeletonRanges).
func (cu *compUnit) bases() dwarf.Bases {
	b := dwarf.Bases{StrOffsets: cu.strOffBase, Addr: cu.addrBase, Rnglists: cu.rnglistsBase}
	if cu.skeleton != nil {
		b.GNURanges = cu.rangesBase
	}
	return b
}

// unitSections are the sections a unit's range lists read.
type unitSections struct{ cu *compUnit }

func (s unitSections) DebugAddr() []byte { return s.cu.addrSection() }

func (s unitSections) DebugRanges() []byte {
	if s.cu.skeleton != nil {
		// DWARF 4 split units keep range lists in the skeleton's file.
		return s.cu.skeleton.file.section(secRanges)
	}
	return s.cu.file.section(secRanges)
}

func (s unitSections) DebugRnglists() []byte { return s.cu.file.section(secRnglists) }

// dieUnit returns the unit whose DIEs describe this unit's code: the split
// unit for a skeleton (loading the .dwo on first use), else cu itself.
func (cu *compUnit) dieUnit() (*compUnit, error) {
	if err := cu.readUnitDIE(); err != nil {
		return nil, err
	}
	if !cu.isSkeleton() {
		return cu, nil
	}
	cu.splitOnce.Do(func() { cu.split, cu.splitErr = cu.file.loadSplit(cu) })
	return cu.split, cu.splitErr
}
