package dwarf

import "fmt"

// LocEntry is one entry of a location list: Expr gives the location for pcs
// in [Lo, Hi); a Default entry (DW_LLE_default_location) applies where no
// other does.
type LocEntry struct {
	Lo, Hi  uint64
	Expr    []byte
	Default bool
}

func (l LocEntry) String() string {
	if l.Default {
		return fmt.Sprintf("default: % x", l.Expr)
	}
	return fmt.Sprintf("[%#x,%#x): % x", l.Lo, l.Hi, l.Expr)
}

// MaxListEntries bounds one location or range list: a longer one is an
// error, not an allocation proportional to a hostile section.
const MaxListEntries = 1 << 16

// AddrIndex resolves an index into .debug_addr (DW_FORM_addrx and the
// *x entries of DWARF 5 lists).
type AddrIndex func(uint64) (uint64, error)

// LocV4 decodes a DWARF 2-4 .debug_loc list at off. base is the unit's base
// address (its DW_AT_low_pc); addrSize is 4 or 8.
func LocV4(data []byte, off uint64, addrSize uint8, base uint64) ([]LocEntry, error) {
	r := NewCursor(".debug_loc", data, off)
	maxAddr := ^uint64(0)
	if addrSize == 4 {
		maxAddr = 0xffffffff
	}
	var out []LocEntry
	for n := 0; r.err == nil; n++ {
		if n > MaxListEntries {
			return out, &FormatError{r.sec, off, "location list has too many entries"}
		}
		lo, hi := r.Sized(addrSize), r.Sized(addrSize)
		switch {
		case r.err != nil:
		case lo == 0 && hi == 0:
			return out, nil
		case lo == maxAddr:
			base = hi
		default:
			expr := r.Bytes(uint64(r.U16()))
			if r.err == nil {
				out = append(out, LocEntry{Lo: base + lo, Hi: base + hi, Expr: expr[:len(expr):len(expr)]})
			}
		}
	}
	return out, r.err
}

// DW_LLE_* location list entry kinds of DWARF 5, and GCC's view pair.
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
	lleGNUViewPair     = 9 // two view numbers (DW_AT_GNU_locviews), no location
)

// LocLists decodes a DWARF 5 .debug_loclists list at off. base is the
// unit's base address; addrx resolves the *x entries (nil when the unit has
// no .debug_addr).
func LocLists(data []byte, off uint64, addrSize uint8, base uint64, addrx AddrIndex) ([]LocEntry, error) {
	r := NewCursor(".debug_loclists", data, off)
	ax := indexer(&r, addrx)
	return locEntries(&r, off, false, func(kind uint8, e *LocEntry) listStep {
		switch kind {
		case lleEndOfList:
			return listEnd
		case lleBaseAddressx:
			base = ax(r.Uleb())
			return listNoEntry
		case lleBaseAddress:
			base = r.Sized(addrSize)
			return listNoEntry
		case lleGNUViewPair:
			r.Uleb()
			r.Uleb()
			return listNoEntry
		case lleStartxEndx:
			e.Lo = ax(r.Uleb())
			e.Hi = ax(r.Uleb())
		case lleStartxLength:
			e.Lo = ax(r.Uleb())
			e.Hi = e.Lo + r.Uleb()
		case lleOffsetPair:
			e.Lo = base + r.Uleb()
			e.Hi = base + r.Uleb()
		case lleDefaultLocation:
			e.Default = true
		case lleStartEnd:
			e.Lo, e.Hi = r.Sized(addrSize), r.Sized(addrSize)
		case lleStartLength:
			e.Lo = r.Sized(addrSize)
			e.Hi = e.Lo + r.Uleb()
		default:
			r.Fail(fmt.Sprintf("unknown location list entry kind %#x", kind))
			return listNoEntry
		}
		return listEntry
	})
}

// listStep is what one entry of a location list was (locEntries).
type listStep uint8

const (
	listEntry   listStep = iota // a location: its expression follows
	listNoEntry                 // a base address or a view pair: no expression
	listEnd                     // the end of the list
)

// locEntries decodes the entries of a DWARF 5 or GNU split location list:
// entry reads one entry's kind-specific part into e (the kind byte read),
// and the expression follows with a 2-byte length (expr16) or a ULEB128 one.
// A list is bounded by MaxListEntries.
func locEntries(r *Cursor, off uint64, expr16 bool, entry func(kind uint8, e *LocEntry) listStep) ([]LocEntry, error) {
	var out []LocEntry
	for n := 0; r.err == nil; n++ {
		if n > MaxListEntries {
			return out, &FormatError{r.sec, off, "location list has too many entries"}
		}
		var e LocEntry
		switch entry(r.U8(), &e) {
		case listEnd:
			return out, r.err
		case listNoEntry:
			continue
		}
		var size uint64
		if expr16 {
			size = uint64(r.U16())
		} else {
			size = r.Uleb()
		}
		e.Expr = r.Bytes(size)
		if r.err == nil {
			e.Expr = e.Expr[:len(e.Expr):len(e.Expr)]
			out = append(out, e)
		}
	}
	return out, r.err
}

// DW_LLE_GNU_* entry kinds of GNU split DWARF 4 (.debug_loc.dwo), the
// pre-standard numbering.
const (
	lleGNUEndOfList   = 0
	lleGNUBaseAddress = 1 // index
	lleGNUStartEnd    = 2 // index, index
	lleGNUStartLength = 3 // index, 4-byte length
	lleGNUOffsetPair  = 4 // 4-byte offsets from the base address
)

// LocGNUSplit decodes a location list of .debug_loc.dwo at off (GNU split
// DWARF 4): addresses are .debug_addr indexes, expressions have 2-byte
// lengths.
func LocGNUSplit(data []byte, off uint64, base uint64, addrx AddrIndex) ([]LocEntry, error) {
	r := NewCursor(".debug_loc.dwo", data, off)
	ax := indexer(&r, addrx)
	return locEntries(&r, off, true, func(kind uint8, e *LocEntry) listStep {
		switch kind {
		case lleGNUEndOfList:
			return listEnd
		case lleGNUBaseAddress:
			base = ax(r.Uleb())
			return listNoEntry
		case lleGNUStartEnd:
			e.Lo = ax(r.Uleb())
			e.Hi = ax(r.Uleb())
		case lleGNUStartLength:
			e.Lo = ax(r.Uleb())
			e.Hi = e.Lo + uint64(r.U32())
		case lleGNUOffsetPair:
			e.Lo = base + uint64(r.U32())
			e.Hi = base + uint64(r.U32())
		case lleGNUViewPair:
			r.Uleb()
			r.Uleb()
			return listNoEntry
		default:
			r.Fail(fmt.Sprintf("unknown location list entry kind %#x", kind))
			return listNoEntry
		}
		return listEntry
	})
}

// LoclistOffset resolves a DW_FORM_loclistx index: the offset table starts
// at base (DW_AT_loclists_base) and its entries are relative to base.
func LoclistOffset(data []byte, base, index uint64, is64 bool) (uint64, error) {
	size := uint64(4)
	if is64 {
		size = 8
	}
	if index > uint64(len(data))/size {
		return 0, &FormatError{".debug_loclists", base, fmt.Sprintf("location list index %d out of range", index)}
	}
	r := NewCursor(".debug_loclists", data, base+index*size)
	v := r.SecOffset(is64)
	return base + v, r.err
}

// indexer wraps addrx so that a failure (or its absence) becomes r's error.
func indexer(r *Cursor, addrx AddrIndex) func(uint64) uint64 {
	return func(i uint64) uint64 {
		if addrx == nil {
			r.Fail("indexed address without .debug_addr")
			return 0
		}
		v, err := addrx(i)
		if err != nil && r.err == nil {
			r.err = err
			r.off = uint64(len(r.data))
		}
		return v
	}
}
