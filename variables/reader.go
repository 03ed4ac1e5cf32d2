package variables

import (
	"debug/dwarf"
	"errors"
	"fmt"
	"sort"
	"sync"

	dw "github.com/sondedbg/sonde/dwarf"
	"github.com/sondedbg/sonde/symbols"
)

// Reader serves the variables and types of one binary's DWARF. It is safe for
// concurrent use: every DIE access holds the Reader's lock, and what is
// decoded (types, function scope trees) is cached for the Reader's life.
// Reading is lazy: the unit headers are walked once (each header names where
// the next starts), and a unit's abbreviations and DIEs are decoded when a
// pc, type or name first leads there (die.go).
type Reader struct {
	mu sync.Mutex

	info, typesSec, abbrev, strSec, lineStr, strOffsets []byte
	loc, loclists, addr, ranges, rnglists               []byte

	abbrevMu sync.Mutex
	abbrevs  map[uint64]*dw.AbbrevTable // by offset in .debug_abbrev

	// unitAt finds the compile unit covering a pc through the symbolizer's
	// unit index (aranges), so that no other unit is read; nil for Readers
	// made from bare sections, which index units by their DIEs (cuIndex).
	unitAt func(pc uint64) (off uint64, ok bool)

	units []unitInfo              // every unit of .debug_info, by offset
	sigs  map[uint64]dwarf.Offset // DWARF 5 type-unit signature -> type DIE

	cuOnce  sync.Once
	cuSpans []cuSpan // compile units by address

	types     map[dwarf.Offset]*Type
	funcs     map[dwarf.Offset]*Scope // function scope trees by subprogram DIE
	funcIdx   map[int][]funcSpan      // functions by address, per unit
	nestedIdx map[int][]funcSpan      // functions inside functions (nested.go)

	// paramsOnly: the function being decoded gets no locals (params.go).
	paramsOnly bool

	// Split DWARF: a Reader per .dwo file, made on first need.
	splitUnits func() ([]symbols.SplitUnit, error)
	tag        uint64 // a child's offset tag (0 for a binary's Reader)
	parent     *Reader
	childOnce  sync.Once
	children   []*Reader
	childSpans []cuSpan // code ranges of split units -> index in children
	childErr   error

	// A GNU split DWARF 4 child (see newChild): location lists in GNU
	// form, ranges from the binary's .debug_ranges at rangesBase, relative
	// to the skeleton's low pc.
	gnuSplit4              bool
	rangesBase, splitLowPC uint64

	namesOnce sync.Once
	globals   map[string][]dwarf.Offset // variables outside functions, by name
	typeNames map[string][]dwarf.Offset // named types, by name
	qualified map[dwarf.Offset]string   // classes in namespaces and classes: their qualified names
	enumNames map[string][]dwarf.Offset // enum types, by the names of their enumerators
	namesErr  error
	qualMemo  map[qualKey]qualified // the walks' names of DIEs (qualname.go)
	// qualWalked counts the bytes of DIEs qualifiedOf's walks went
	// through: once they add up to the sections', the index is cheaper.
	qualWalked uint64

	alt     altSections // dwz supplementary file (alt.go)
	altBase uint64
}

// unitInfo is one unit header plus, once read, what its unit DIE says that
// location decoding needs. off, dataOff, end and typeOff are in the
// Reader's offset space (base plus the section offset).
type unitInfo struct {
	off, dataOff, end uint64 // header start, first DIE, end
	version           int
	unitType          uint8
	addrSize          int
	sig, typeOff      uint64 // type units
	hdr               dw.Unit
	types             bool   // a DWARF 4 type unit of .debug_types
	base              uint64 // what the section's offsets are shifted by
	alt               bool   // a unit of the dwz supplementary file (alt.go)

	dieRead      bool
	lowPC        uint64
	addrBase     uint64
	addrBaseSet  bool // addrBase known: the unit's, or a split unit's skeleton's
	loclistsBase uint64
	strOffBase   uint64
	rnglistsBase uint64
	lang         int64
}

type cuSpan struct {
	lo, hi uint64
	unit   int
}

const (
	utCompile = 1
	utType    = 2
)

// readerKey is the key of a Binary's Reader among what symbols.Binary keeps
// for other packages (Derived): the Reader lives and goes with its Binary.
type readerKey struct{}

type readerEntry struct {
	r   *Reader
	err error
}

// For returns the Reader of b, making it on first use; Readers are shared by
// everyone asking for the same Binary.
func For(b *symbols.Binary) (*Reader, error) {
	e := b.Derived(readerKey{}, func() any {
		r, err := New(b)
		return &readerEntry{r, err}
	}).(*readerEntry)
	return e.r, e.err
}

// New makes a Reader over b's DWARF. Prefer For, which shares Readers.
func New(b *symbols.Binary) (*Reader, error) {
	if !b.HasDWARF() {
		return nil, &Error{Op: "open " + b.Path(), Err: ErrNoDWARF}
	}
	sec := func(name string) []byte {
		s, _ := b.DWARFSection(name)
		return s
	}
	r, err := NewFromSections(Sections{
		Info: sec(".debug_info"), Abbrev: sec(".debug_abbrev"), Str: sec(".debug_str"),
		Line: sec(".debug_line"), Ranges: sec(".debug_ranges"), Addr: sec(".debug_addr"),
		LineStr: sec(".debug_line_str"), StrOffsets: sec(".debug_str_offsets"),
		RngLists: sec(".debug_rnglists"), Loc: sec(".debug_loc"), LocLists: sec(".debug_loclists"),
		Types: sec(".debug_types"),
	})
	if err != nil {
		return nil, err
	}
	altSec := func(name string) []byte {
		s, _ := b.AltDWARFSection(name)
		return s
	}
	r.addAlt(altSections{info: altSec(".debug_info"), abbrev: altSec(".debug_abbrev"), str: altSec(".debug_str")})
	r.splitUnits = splitSource(b)
	r.unitAt = func(pc uint64) (uint64, bool) {
		u, ok := b.CompileUnit(pc)
		return u.Offset, ok
	}
	return r, nil
}

// Sections are the DWARF sections a Reader uses, already decompressed.
type Sections struct {
	Info, Abbrev, Str, Line, Ranges, Addr, LineStr, StrOffsets, RngLists, Loc, LocLists []byte
	// Types is DWARF 4's .debug_types (type units of -fdebug-types-section).
	Types []byte
}

// NewFromSections makes a Reader from raw sections (fuzzing, tests, or DWARF
// that does not come from a symbols.Binary).
func NewFromSections(s Sections) (r *Reader, err error) {
	if len(s.Info) == 0 {
		return nil, &Error{Op: "open", Err: ErrNoDWARF}
	}
	defer func() {
		// The reader is bounds-checked, but a decoder bug must not take the agent down.
		if p := recover(); p != nil {
			r, err = nil, bad("open", 0, "panic decoding DWARF: %v", p)
		}
	}()
	r = &Reader{info: s.Info, typesSec: s.Types, abbrev: s.Abbrev, strSec: s.Str, lineStr: s.LineStr,
		strOffsets: s.StrOffsets, loc: s.Loc, loclists: s.LocLists, addr: s.Addr, ranges: s.Ranges,
		rnglists: s.RngLists, sigs: map[uint64]dwarf.Offset{}, types: map[dwarf.Offset]*Type{},
		funcs: map[dwarf.Offset]*Scope{}}
	hdrs, err := dw.ReadUnits(".debug_info", s.Info, false)
	if len(hdrs) == 0 && err != nil {
		return nil, &Error{Op: "open", Err: fmt.Errorf("%w: %v", ErrBadDWARF, err)}
	}
	var ths []dw.Unit
	if len(s.Types) > 0 {
		// DWARF 4 type units: their offsets follow .debug_info's. A damaged
		// unit ends the list; the units before it stay usable.
		ths, _ = dw.ReadUnits(".debug_types", s.Types, true)
	}
	r.units = make([]unitInfo, 0, len(hdrs)+len(ths))
	r.addUnits(hdrs, false, 0)
	r.addUnits(ths, true, uint64(len(s.Info)))
	for _, u := range r.units {
		if u.unitType == utType {
			r.sigs[u.sig] = dwarf.Offset(u.typeOff)
		}
	}
	return r, nil
}

// addUnits appends unit headers whose section offsets are shifted by base.
// DWARF 5 split type units count as type units, skeleton and split compile
// units keep their DW_UT_* numbers.
func (r *Reader) addUnits(hdrs []dw.Unit, types bool, base uint64) {
	for _, h := range hdrs {
		u := unitInfo{off: base + h.Offset, dataOff: base + h.DataOffset, end: base + h.End,
			version: int(h.Version), unitType: h.Type, addrSize: int(h.AddrSize), hdr: h,
			types: types, base: base}
		if h.Type == dw.UnitType || h.Type == dw.UnitSplitType {
			u.unitType, u.sig, u.typeOff = utType, h.Signature, base+h.TypeOffset
		}
		r.units = append(r.units, u)
	}
}

// unitOf returns the index of the unit containing DIE offset off, or -1.
func (r *Reader) unitOf(off dwarf.Offset) int {
	i := sort.Search(len(r.units), func(i int) bool { return r.units[i].end > uint64(off) })
	if i >= len(r.units) || uint64(off) < r.units[i].dataOff {
		return -1
	}
	return i
}

// unitDIE reads, once, the attributes of unit i's first DIE that location
// decoding needs. The bases of indexed forms come first (other attributes of
// the DIE may use those forms); a split unit's were set from its skeleton
// when its Reader was made. Callers hold r.mu.
func (r *Reader) unitDIE(i int) *unitInfo {
	u := &r.units[i]
	if u.dieRead {
		return u
	}
	u.dieRead = true
	ur, err := r.unitReader(i)
	if err != nil {
		return u
	}
	var e dw.Entry
	if ur.Next(&e) != nil {
		return u
	}
	b := dw.UnitBases(&u.hdr, &e)
	u.strOffBase, u.rnglistsBase, u.loclistsBase = b.StrOffsets, b.Rnglists, b.Loclists
	if b.AddrSet || !u.addrBaseSet {
		// A split unit names none: it keeps its skeleton's (newChild).
		u.addrBase, u.addrBaseSet = b.Addr, true
	}
	ent := r.resolveDIE(i, &e)
	if v, ok := ent.Val(dwarf.AttrLowpc).(uint64); ok {
		u.lowPC = v
	}
	if v, ok := ent.Val(dwarf.AttrLanguage).(int64); ok {
		u.lang = v
	}
	return u
}

// entryAt reads the DIE at off. Callers hold r.mu.
func (r *Reader) entryAt(off dwarf.Offset) (*entry, *dieReader, error) {
	rd := r.dieReader()
	rd.Seek(off)
	e, err := rd.Next()
	if err != nil {
		return nil, nil, err
	}
	if e == nil || e.Offset != off {
		return nil, nil, bad("read DIE", uint64(off), "no DIE there")
	}
	return e, rd, nil
}

// refOf resolves a reference attribute (same-unit, section or type-signature
// form) to a DIE offset.
func (r *Reader) refOf(e *entry, attr dwarf.Attr) (dwarf.Offset, bool) {
	f := e.AttrField(attr)
	if f == nil {
		return 0, false
	}
	switch v := f.Val.(type) {
	case dwarf.Offset:
		return v, true
	case uint64:
		if f.Class == dwarf.ClassReferenceSig {
			off, ok := r.sigs[v]
			return off, ok
		}
	}
	return 0, false
}

// cuIndex builds, once, the address map of compile units.
func (r *Reader) cuIndex() []cuSpan {
	r.cuOnce.Do(func() {
		rd := r.dieReader()
		for i, u := range r.units {
			if u.unitType != utCompile && u.unitType != 4 {
				continue
			}
			rd.Seek(dwarf.Offset(u.dataOff))
			e, err := rd.Next()
			if err != nil || e == nil {
				continue
			}
			rs, err := r.rangesOf(e)
			if err != nil {
				continue
			}
			for _, rg := range rs {
				if rg[1] > rg[0] && rg[0] != 0 {
					r.cuSpans = append(r.cuSpans, cuSpan{rg[0], rg[1], i})
				}
			}
		}
		sort.Slice(r.cuSpans, func(i, j int) bool { return r.cuSpans[i].lo < r.cuSpans[j].lo })
	})
	return r.cuSpans
}

// unitAtPC returns the compile units whose ranges contain pc. Callers hold
// r.mu.
func (r *Reader) unitsAtPC(pc uint64) []int {
	if r.unitAt != nil {
		off, ok := r.unitAt(pc)
		if !ok {
			return nil
		}
		i := sort.Search(len(r.units), func(i int) bool { return r.units[i].off >= off })
		if i < len(r.units) && r.units[i].off == off && !r.units[i].types {
			return []int{i}
		}
		return nil
	}
	spans := r.cuIndex()
	var out []int
	i := sort.Search(len(spans), func(i int) bool { return spans[i].lo > pc })
	// Spans may overlap (bad DWARF, LTO): look back over every span that
	// starts at or before pc. Ranges are few per unit, so this stays short.
	for j := i - 1; j >= 0 && len(out) < 4; j-- {
		if pc < spans[j].hi {
			out = append(out, spans[j].unit)
		}
		if i-j > 64 {
			break
		}
	}
	return out
}

// errPanic converts a recovered panic into an error.
func errPanic(op string, p any) error {
	return &Error{Op: op, Err: errors.Join(ErrBadDWARF, fmt.Errorf("panic: %v", p))}
}
