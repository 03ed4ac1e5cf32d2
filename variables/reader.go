package variables

import (
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/sondedbg/sonde/symbols"
)

// Reader serves the variables and types of one binary's DWARF. It is safe for
// concurrent use: the standard library's dwarf.Data it decodes DIEs with is
// not, so every DIE access holds the Reader's lock, and what is decoded
// (types, function scope trees) is cached for the Reader's life.
type Reader struct {
	mu sync.Mutex
	d  *dwarf.Data

	info, loc, loclists, addr, ranges []byte

	units []unitInfo              // every unit of .debug_info, by offset
	sigs  map[uint64]dwarf.Offset // DWARF 5 type-unit signature -> type DIE

	cuOnce  sync.Once
	cuSpans []cuSpan // compile units by address

	types   map[dwarf.Offset]*Type
	funcs   map[dwarf.Offset]*Scope // function scope trees by subprogram DIE
	funcIdx map[int][]funcSpan      // functions by address, per unit

	// Split DWARF: a Reader per .dwo file, made on first need.
	splitUnits func() ([]symbols.SplitUnit, error)
	tag        uint64 // a child's offset tag (0 for a binary's Reader)
	parent     *Reader
	childOnce  sync.Once
	children   []*Reader
	childSpans []cuSpan // code ranges of split units -> index in children
	childErr   error

	// A GNU split DWARF 4 child (see split4.go): location lists in GNU
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
}

// unitInfo is one unit header plus, once read, what its unit DIE says that
// location decoding needs.
type unitInfo struct {
	off, dataOff, end uint64 // header start, first DIE, end
	version           int
	unitType          uint8
	addrSize          int
	sig, typeOff      uint64 // type units

	dieRead      bool
	lowPC        uint64
	addrBase     uint64
	addrBaseSet  bool // addrBase given (0 is valid where .debug_addr has no header)
	loclistsBase uint64
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

var readers sync.Map // *symbols.Binary -> *readerEntry

type readerEntry struct {
	once sync.Once
	r    *Reader
	err  error
}

// For returns the Reader of b, making it on first use; Readers are shared by
// everyone asking for the same Binary.
func For(b *symbols.Binary) (*Reader, error) {
	v, _ := readers.LoadOrStore(b, &readerEntry{})
	e := v.(*readerEntry)
	e.once.Do(func() { e.r, e.err = New(b) })
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
	r.splitUnits = splitSource(b)
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
		// debug/dwarf is robust, but a decoder bug must not take the agent down.
		if p := recover(); p != nil {
			r, err = nil, bad("open", 0, "panic decoding DWARF: %v", p)
		}
	}()
	// DWARF 4 type units live in .debug_types, which debug/dwarf only reads
	// through its own type decoder. They are appended to .debug_info here,
	// each header turned into a compile unit header of the same length, so
	// that their DIEs get offsets in one space and refer to each other as
	// before (unit-relative references do not move).
	info, typeSigs := s.Info, map[uint64]uint64(nil)
	if len(s.Types) > 0 {
		info, typeSigs = appendTypeUnits(s.Info, s.Types)
	}
	d, err := dwarf.New(s.Abbrev, nil, nil, info, s.Line, nil, s.Ranges, s.Str)
	if err != nil {
		return nil, &Error{Op: "open", Err: fmt.Errorf("%w: %v", ErrBadDWARF, err)}
	}
	for _, x := range []struct {
		name string
		b    []byte
	}{{".debug_addr", s.Addr}, {".debug_line_str", s.LineStr}, {".debug_str_offsets", s.StrOffsets}, {".debug_rnglists", s.RngLists}} {
		if len(x.b) > 0 {
			if err := d.AddSection(x.name, x.b); err != nil {
				return nil, &Error{Op: "open", Err: fmt.Errorf("%w: %s: %v", ErrBadDWARF, x.name, err)}
			}
		}
	}
	r = &Reader{d: d, info: info, loc: s.Loc, loclists: s.LocLists, addr: s.Addr, ranges: s.Ranges,
		sigs: map[uint64]dwarf.Offset{}, types: map[dwarf.Offset]*Type{}, funcs: map[dwarf.Offset]*Scope{}}
	r.units = parseUnitHeaders(info)
	for _, u := range r.units {
		if u.unitType == utType {
			r.sigs[u.sig] = dwarf.Offset(u.off + u.typeOff)
		}
	}
	for sig, off := range typeSigs {
		r.sigs[sig] = dwarf.Offset(off)
	}
	return r, nil
}

// appendTypeUnits returns .debug_info followed by the DWARF 4 type units of
// .debug_types, and where each signature's type DIE ended up. A type unit
// header (length, version, abbreviation offset, address size, signature,
// type offset) starts like a compile unit header; its signature and type
// offset (12 bytes, or 16 in 64-bit DWARF) are overwritten with zeros, which
// read as null entries before the unit's first DIE.
func appendTypeUnits(info, types []byte) ([]byte, map[uint64]uint64) {
	le := binary.LittleEndian
	out := make([]byte, 0, len(info)+len(types))
	out = append(out, info...)
	sigs := map[uint64]uint64{}
	for off := uint64(0); off+23 <= uint64(len(types)); {
		length := uint64(le.Uint32(types[off:]))
		if length == 0xffffffff || length < 19 || length > uint64(len(types))-off-4 {
			break // 64-bit type units are not rewritten; damaged ones end the list
		}
		if le.Uint16(types[off+4:]) != 4 {
			break
		}
		unit := append([]byte(nil), types[off:off+4+length]...)
		sig := le.Uint64(unit[11:])
		typeOff := uint64(le.Uint32(unit[19:]))
		for i := 11; i < 23; i++ {
			unit[i] = 0
		}
		base := uint64(len(out))
		if typeOff < uint64(len(unit)) {
			sigs[sig] = base + typeOff
		}
		out = append(out, unit...)
		off += 4 + length
	}
	return out, sigs
}

// parseUnitHeaders lists the units of .debug_info. The standard library
// drops the type signature and type offset of DWARF 5 type units, which are
// needed to follow DW_FORM_ref_sig8 references, so headers are read here. A
// damaged header ends the list.
func parseUnitHeaders(info []byte) []unitInfo {
	var out []unitInfo
	le := binary.LittleEndian
	for off := uint64(0); off+11 <= uint64(len(info)); {
		u := unitInfo{off: off}
		p := off
		length := uint64(le.Uint32(info[p:]))
		p += 4
		offSize := uint64(4)
		if length == 0xffffffff {
			if p+8 > uint64(len(info)) {
				break
			}
			length = le.Uint64(info[p:])
			p += 8
			offSize = 8
		}
		if length > uint64(len(info))-p || length < 2 {
			break
		}
		u.end = p + length
		u.version = int(le.Uint16(info[p:]))
		p += 2
		if need := 2 + offSize; p+need > u.end { // unit type/address size and abbreviation offset
			break
		}
		switch {
		case u.version >= 5:
			u.unitType = info[p]
			u.addrSize = int(info[p+1])
			p += 2 + offSize
			switch u.unitType {
			case utType, 6: // DW_UT_type, DW_UT_split_type
				if p+8+offSize > u.end {
					return out
				}
				u.sig = le.Uint64(info[p:])
				p += 8
				if offSize == 8 {
					u.typeOff = le.Uint64(info[p:])
				} else {
					u.typeOff = uint64(le.Uint32(info[p:]))
				}
				p += offSize
				u.unitType = utType
			case 4, 5: // skeleton, split compile: unit id
				p += 8
			}
		default:
			u.unitType = utCompile
			p += offSize
			u.addrSize = int(info[p])
			p++
		}
		u.dataOff = p
		out = append(out, u)
		off = u.end
	}
	return out
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
// decoding needs. Callers hold r.mu.
func (r *Reader) unitDIE(i int) *unitInfo {
	u := &r.units[i]
	if u.dieRead {
		return u
	}
	u.dieRead = true
	rd := r.d.Reader()
	rd.Seek(dwarf.Offset(u.dataOff))
	e, err := rd.Next()
	if err != nil || e == nil {
		return u
	}
	if v, ok := e.Val(dwarf.AttrLowpc).(uint64); ok {
		u.lowPC = v
	}
	if v, ok := e.Val(dwarf.AttrAddrBase).(int64); ok {
		u.addrBase, u.addrBaseSet = uint64(v), true
	}
	if v, ok := e.Val(dwarf.AttrLoclistsBase).(int64); ok {
		u.loclistsBase = uint64(v)
	}
	if v, ok := e.Val(dwarf.AttrLanguage).(int64); ok {
		u.lang = v
	}
	return u
}

// entryAt reads the DIE at off. Callers hold r.mu.
func (r *Reader) entryAt(off dwarf.Offset) (*dwarf.Entry, *dwarf.Reader, error) {
	if r.unitOf(off) < 0 {
		return nil, nil, bad("read DIE", uint64(off), "offset is in no unit")
	}
	rd := r.d.Reader()
	rd.Seek(off)
	e, err := rd.Next()
	if err != nil {
		return nil, nil, &Error{Op: "read DIE", Offset: uint64(off), Err: fmt.Errorf("%w: %v", ErrBadDWARF, err)}
	}
	if e == nil || e.Offset != off {
		return nil, nil, bad("read DIE", uint64(off), "no DIE there")
	}
	return e, rd, nil
}

// refOf resolves a reference attribute (same-unit, section or type-signature
// form) to a DIE offset.
func (r *Reader) refOf(e *dwarf.Entry, attr dwarf.Attr) (dwarf.Offset, bool) {
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
		rd := r.d.Reader()
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
