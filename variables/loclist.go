package variables

import (
	"debug/dwarf"
	"encoding/binary"
	"fmt"

	"github.com/sondedbg/sonde/internal/leb128"
)

// LocKind says how a variable's location is described.
type LocKind uint8

const (
	LocNone  LocKind = iota // no location: optimized out everywhere
	LocExpr                 // one location expression, valid at every pc of the scope
	LocList                 // a location list: an expression per pc range
	LocConst                // a constant value (DW_AT_const_value)
)

// Location is a variable's location description as DWARF gives it.
type Location struct {
	Kind  LocKind
	Expr  []byte         // LocExpr
	List  []LocListEntry // LocList, link-time ranges
	Const []byte         // LocConst: the value's bytes (little-endian)
	// ConstBytes is set when the constant is a block or a string, not an
	// integer form (gdb's LOC_CONST_BYTES, which its info locals and bt full
	// do not list).
	ConstBytes bool
	Err        error // a location list that could not be decoded
	unit       int
}

// LocListEntry is one entry of a location list: Expr describes the location
// for link-time pcs in [Lo, Hi); Default entries apply where no other does.
type LocListEntry struct {
	Lo, Hi  uint64
	Expr    []byte
	Default bool
}

// At returns the expression that gives the location at link-time pc, or
// false when the variable has no location there.
func (l *Location) At(pc uint64) ([]byte, bool) {
	switch l.Kind {
	case LocExpr:
		return l.Expr, true
	case LocList:
		var def []byte
		hasDef := false
		for _, e := range l.List {
			if e.Default {
				def, hasDef = e.Expr, true
				continue
			}
			if pc >= e.Lo && pc < e.Hi {
				return e.Expr, len(e.Expr) > 0
			}
		}
		return def, hasDef && len(def) > 0
	}
	return nil, false
}

// maxListEntries bounds one location list.
const maxListEntries = 1 << 16

// locationOf decodes a location attribute of a DIE in unit. Callers hold r.mu.
func (r *Reader) locationOf(f *dwarf.Field, unit int) Location {
	switch v := f.Val.(type) {
	case []byte:
		return Location{Kind: LocExpr, Expr: v, unit: unit}
	case int64, uint64:
		var n uint64
		if i, ok := v.(int64); ok {
			n = uint64(i)
		} else {
			n = v.(uint64)
		}
		u := r.unitDIE(unit)
		l := Location{Kind: LocList, unit: unit}
		switch {
		case r.gnuSplit4:
			l.List, l.Err = r.parseLocGNU(u, n)
		case f.Class == dwarf.ClassLocList:
			// DW_FORM_loclistx: an index into the unit's offset table.
			off, err := r.loclistxOffset(u, n)
			if err != nil {
				l.Err = err
				return l
			}
			l.List, l.Err = r.parseLocLists(u, off)
		case u.version >= 5:
			l.List, l.Err = r.parseLocLists(u, n)
		default:
			l.List, l.Err = r.parseLoc(u, n)
		}
		return l
	}
	return Location{Kind: LocNone, unit: unit}
}

// constLocation turns DW_AT_const_value into the value's bytes.
func constLocation(f *dwarf.Field, t *Type) Location {
	size := int64(8)
	if t != nil {
		if s := t.ByteSize(); s > 0 && s <= 8 {
			size = s
		}
	}
	switch v := f.Val.(type) {
	case int64:
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		return Location{Kind: LocConst, Const: b[:size]}
	case uint64:
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], v)
		return Location{Kind: LocConst, Const: b[:size]}
	case []byte:
		return Location{Kind: LocConst, Const: v, ConstBytes: true}
	case string:
		return Location{Kind: LocConst, Const: append([]byte(v), 0), ConstBytes: true}
	}
	return Location{Kind: LocNone}
}

func (r *Reader) loclistxOffset(u *unitInfo, idx uint64) (uint64, error) {
	base := u.loclistsBase
	if base == 0 {
		base = 12 // just past a 32-bit .debug_loclists header
	}
	p := base + idx*4
	if idx > uint64(len(r.loclists)) || p+4 > uint64(len(r.loclists)) {
		return 0, bad("read location list", 0, "loclistx index %d outside .debug_loclists", idx)
	}
	return base + uint64(binary.LittleEndian.Uint32(r.loclists[p:])), nil
}

// addrx reads entry idx of the unit's .debug_addr table.
func (r *Reader) addrx(u *unitInfo, idx uint64) (uint64, error) {
	base := u.addrBase
	if base == 0 && !u.addrBaseSet {
		base = 8
	}
	p := base + idx*8
	if idx > uint64(len(r.addr)) || p+8 > uint64(len(r.addr)) {
		return 0, bad("read .debug_addr", 0, "index %d outside the section", idx)
	}
	return binary.LittleEndian.Uint64(r.addr[p:]), nil
}

// parseLoc decodes a DWARF 2-4 .debug_loc list at off.
func (r *Reader) parseLoc(u *unitInfo, off uint64) ([]LocListEntry, error) {
	b := r.loc
	base := u.lowPC
	var out []LocListEntry
	for n := 0; ; n++ {
		if n > maxListEntries {
			return out, bad("read .debug_loc", 0, "list at %#x has too many entries", off)
		}
		if off+16 > uint64(len(b)) {
			return out, bad("read .debug_loc", 0, "list at %#x runs past the section end", off)
		}
		lo := binary.LittleEndian.Uint64(b[off:])
		hi := binary.LittleEndian.Uint64(b[off+8:])
		off += 16
		if lo == 0 && hi == 0 {
			return out, nil
		}
		if lo == ^uint64(0) {
			base = hi
			continue
		}
		if off+2 > uint64(len(b)) {
			return out, bad("read .debug_loc", 0, "entry at %#x truncated", off)
		}
		n := uint64(binary.LittleEndian.Uint16(b[off:]))
		off += 2
		if off+n > uint64(len(b)) {
			return out, bad("read .debug_loc", 0, "expression at %#x runs past the section end", off)
		}
		out = append(out, LocListEntry{Lo: base + lo, Hi: base + hi, Expr: b[off : off+n : off+n]})
		off += n
	}
}

// DWARF 5 location list entry kinds.
const (
	lleEndOfList       = 0
	lleBaseAddressx    = 1
	lleStartxEndx      = 2
	lleStartxLength    = 3
	lleOffsetPair      = 4
	lleDefaultLocation = 5
	lleBaseAddress     = 6
	lleStartEnd        = 7
	lleStartLength     = 8
)

// parseLocLists decodes a DWARF 5 .debug_loclists list at off.
func (r *Reader) parseLocLists(u *unitInfo, off uint64) ([]LocListEntry, error) {
	c := cursor{b: r.loclists, off: off}
	if off > uint64(len(r.loclists)) {
		return nil, bad("read .debug_loclists", 0, "list offset %#x outside the section", off)
	}
	base := u.lowPC
	var out []LocListEntry
	for n := 0; ; n++ {
		if n > maxListEntries {
			return out, bad("read .debug_loclists", 0, "list at %#x has too many entries", off)
		}
		kind := c.u8()
		var lo, hi uint64
		def := false
		var err error
		switch kind {
		case lleEndOfList:
			if c.bad {
				return out, bad("read .debug_loclists", 0, "list at %#x runs past the section end", off)
			}
			return out, nil
		case lleBaseAddressx:
			base, err = r.addrx(u, c.uleb())
			if err != nil {
				return out, err
			}
			continue
		case lleBaseAddress:
			base = c.u64()
			continue
		case lleStartxEndx:
			if lo, err = r.addrx(u, c.uleb()); err == nil {
				hi, err = r.addrx(u, c.uleb())
			}
		case lleStartxLength:
			lo, err = r.addrx(u, c.uleb())
			hi = lo + c.uleb()
		case lleOffsetPair:
			lo, hi = base+c.uleb(), base+c.uleb()
		case lleDefaultLocation:
			def = true
		case lleStartEnd:
			lo, hi = c.u64(), c.u64()
		case lleStartLength:
			lo = c.u64()
			hi = lo + c.uleb()
		case lleGNUViewPair:
			// gcc's view numbers (DW_AT_GNU_locviews): no location.
			c.uleb()
			c.uleb()
			continue
		default:
			return out, bad("read .debug_loclists", 0, "unknown entry kind %#x at %#x", kind, c.off-1)
		}
		if err != nil {
			return out, err
		}
		expr := c.bytes(c.uleb())
		if c.bad {
			return out, bad("read .debug_loclists", 0, "list at %#x runs past the section end", off)
		}
		out = append(out, LocListEntry{Lo: lo, Hi: hi, Expr: expr, Default: def})
	}
}

// cursor reads a byte slice with bounds checks; bad records any overrun.
type cursor struct {
	b   []byte
	off uint64
	bad bool
}

func (c *cursor) u8() byte {
	if c.off >= uint64(len(c.b)) {
		c.bad = true
		return 0
	}
	v := c.b[c.off]
	c.off++
	return v
}

func (c *cursor) u64() uint64 {
	if c.off+8 > uint64(len(c.b)) {
		c.bad = true
		c.off = uint64(len(c.b))
		return 0
	}
	v := binary.LittleEndian.Uint64(c.b[c.off:])
	c.off += 8
	return v
}

func (c *cursor) u16() uint16 {
	b := c.bytes(2)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(b)
}

func (c *cursor) u32() uint32 {
	b := c.bytes(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (c *cursor) sleb() int64 {
	v, n := leb128.Int(c.rest())
	c.advance(n)
	return v
}

func (c *cursor) uleb() uint64 {
	v, n := leb128.Uint(c.rest())
	c.advance(n)
	return v
}

// rest is what is left to read.
func (c *cursor) rest() []byte {
	if c.off >= uint64(len(c.b)) {
		return nil
	}
	return c.b[c.off:]
}

// advance moves past a value n bytes long; n == 0 is a truncated value.
func (c *cursor) advance(n int) {
	if n == 0 {
		c.bad = true
		c.off = uint64(len(c.b))
		return
	}
	c.off += uint64(n)
}

func (c *cursor) bytes(n uint64) []byte {
	if n > uint64(len(c.b))-min(c.off, uint64(len(c.b))) {
		c.bad = true
		c.off = uint64(len(c.b))
		return nil
	}
	v := c.b[c.off : c.off+n : c.off+n]
	c.off += n
	return v
}

func (l LocListEntry) String() string {
	if l.Default {
		return fmt.Sprintf("default: % x", l.Expr)
	}
	return fmt.Sprintf("[%#x,%#x): % x", l.Lo, l.Hi, l.Expr)
}
