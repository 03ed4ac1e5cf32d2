package variables

import (
	"debug/dwarf"
	"encoding/binary"
	"fmt"

	dw "github.com/sondedbg/sonde/dwarf"
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
type LocListEntry = dw.LocEntry

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

// locationOf decodes a location attribute of a DIE in unit. Callers hold r.mu.
func (r *Reader) locationOf(f *field, unit int) Location {
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
		addrx := func(i uint64) (uint64, error) { return r.addrx(u, i) }
		addrSize := uint8(u.addrSize)
		switch {
		case r.gnuSplit4:
			l.List, l.Err = dw.LocGNUSplit(r.loc, n, u.lowPC, addrx)
		case f.Class == dwarf.ClassLocList:
			// DW_FORM_loclistx: an index into the unit's offset table.
			base := u.loclistsBase
			if base == 0 {
				base = 12 // just past a 32-bit .debug_loclists header
			}
			off, err := dw.LoclistOffset(r.loclists, base, n, u.hdr.Is64)
			if err != nil {
				l.Err = listErr(err)
				return l
			}
			l.List, l.Err = dw.LocLists(r.loclists, off, addrSize, u.lowPC, addrx)
		case u.version >= 5:
			l.List, l.Err = dw.LocLists(r.loclists, n, addrSize, u.lowPC, addrx)
		default:
			l.List, l.Err = dw.LocV4(r.loc, n, addrSize, u.lowPC)
		}
		l.Err = listErr(l.Err)
		return l
	}
	return Location{Kind: LocNone, unit: unit}
}

// listErr marks a location list's decoding error as bad DWARF.
func listErr(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: "read location list", Err: fmt.Errorf("%w: %v", ErrBadDWARF, err)}
}

// constLocation turns DW_AT_const_value into the value's bytes.
func constLocation(f *field, t *Type) Location {
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

// addrx reads entry idx of the unit's .debug_addr table.
func (r *Reader) addrx(u *unitInfo, idx uint64) (uint64, error) {
	b := r.bases(u)
	ur := r.unitRanges(u, &b)
	v, err := ur.Addrx(idx)
	if err != nil {
		return 0, bad("read .debug_addr", 0, "index %d outside the section", idx)
	}
	return v, nil
}
