package dwarf

import "fmt"

// Range is a half-open address range [Lo, Hi).
type Range struct{ Lo, Hi uint64 }

// RangesV4 decodes a DWARF 2-4 .debug_ranges list at off; base is the unit's
// base address (its DW_AT_low_pc). Empty ranges are dropped.
func RangesV4(data []byte, off uint64, addrSize uint8, base uint64, dst []Range) ([]Range, error) {
	return rangesV4(data, off, addrSize, base, dst, false)
}

// RangesV4All is RangesV4 keeping empty ranges, for callers that tell a
// scope whose code was reduced to nothing from one without ranges.
func RangesV4All(data []byte, off uint64, addrSize uint8, base uint64, dst []Range) ([]Range, error) {
	return rangesV4(data, off, addrSize, base, dst, true)
}

func rangesV4(data []byte, off uint64, addrSize uint8, base uint64, dst []Range, keepEmpty bool) ([]Range, error) {
	r := NewCursor(".debug_ranges", data, off)
	maxAddr := ^uint64(0)
	if addrSize == 4 {
		maxAddr = 0xffffffff
	}
	for r.err == nil {
		lo, hi := r.Sized(addrSize), r.Sized(addrSize)
		if r.err != nil {
			break
		}
		switch {
		case lo == 0 && hi == 0:
			return dst, nil
		case lo == maxAddr:
			base = hi
		case hi > lo || keepEmpty:
			dst = append(dst, Range{base + lo, base + hi})
		}
	}
	return dst, r.err
}

// RnglistOffset resolves a DW_FORM_rnglistx index: the offset table starts at
// base (DW_AT_rnglists_base) and its entries are relative to base.
func RnglistOffset(data []byte, base, index uint64, is64 bool) (uint64, error) {
	size := uint64(4)
	if is64 {
		size = 8
	}
	if index > uint64(len(data))/size {
		return 0, &FormatError{".debug_rnglists", base, fmt.Sprintf("range list index %d out of range", index)}
	}
	r := NewCursor(".debug_rnglists", data, base+index*size)
	v := r.SecOffset(is64)
	return base + v, r.err
}

// DW_RLE_* range list entry kinds.
const (
	rleEndOfList    = 0
	rleBaseAddressx = 1
	rleStartxEndx   = 2
	rleStartxLength = 3
	rleOffsetPair   = 4
	rleBaseAddress  = 5
	rleStartEnd     = 6
	rleStartLength  = 7
)

// Rnglist decodes a DWARF 5 range list at off in .debug_rnglists. addrx
// resolves indexes into .debug_addr (nil when the unit has none). Empty
// ranges are dropped.
func Rnglist(data []byte, off uint64, addrSize uint8, base uint64, addrx func(uint64) (uint64, error), dst []Range) ([]Range, error) {
	return rnglist(data, off, addrSize, base, addrx, dst, false)
}

// RnglistAll is Rnglist keeping empty ranges.
func RnglistAll(data []byte, off uint64, addrSize uint8, base uint64, addrx func(uint64) (uint64, error), dst []Range) ([]Range, error) {
	return rnglist(data, off, addrSize, base, addrx, dst, true)
}

func rnglist(data []byte, off uint64, addrSize uint8, base uint64, addrx func(uint64) (uint64, error), dst []Range, keepEmpty bool) ([]Range, error) {
	r := NewCursor(".debug_rnglists", data, off)
	ax := func(i uint64) uint64 {
		if addrx == nil {
			r.Fail("DW_RLE_*x entry without .debug_addr")
			return 0
		}
		v, err := addrx(i)
		if err != nil && r.err == nil {
			r.err = err
		}
		return v
	}
	for r.err == nil {
		switch kind := r.U8(); kind {
		case rleEndOfList:
			return dst, r.err
		case rleBaseAddressx:
			base = ax(r.Uleb())
		case rleStartxEndx:
			lo := ax(r.Uleb())
			hi := ax(r.Uleb())
			dst = appendRange(keepEmpty, dst, lo, hi)
		case rleStartxLength:
			lo := ax(r.Uleb())
			dst = appendRange(keepEmpty, dst, lo, lo+r.Uleb())
		case rleOffsetPair:
			lo, hi := r.Uleb(), r.Uleb()
			dst = appendRange(keepEmpty, dst, base+lo, base+hi)
		case rleBaseAddress:
			base = r.Sized(addrSize)
		case rleStartEnd:
			lo, hi := r.Sized(addrSize), r.Sized(addrSize)
			dst = appendRange(keepEmpty, dst, lo, hi)
		case rleStartLength:
			lo := r.Sized(addrSize)
			dst = appendRange(keepEmpty, dst, lo, lo+r.Uleb())
		default:
			r.Fail(fmt.Sprintf("unknown range list entry kind %d", kind))
		}
	}
	return dst, r.err
}

func appendRange(keepEmpty bool, dst []Range, lo, hi uint64) []Range {
	if hi > lo || keepEmpty {
		dst = append(dst, Range{lo, hi})
	}
	return dst
}

// Arange is one .debug_aranges entry: a range and the offset of the unit
// (in .debug_info) that covers it.
type Arange struct {
	Range
	UnitOffset uint64
}

// ReadAranges decodes all of .debug_aranges. On malformed input it returns
// the sets decoded so far and an error.
func ReadAranges(data []byte) ([]Arange, error) {
	out, _, err := ReadArangeSets(data)
	return out, err
}

// ReadArangeSets is ReadAranges that also returns the unit offset of every
// set, empty ones included: a producer that writes .debug_aranges writes a
// set for each unit, and an empty set says the unit has no code.
func ReadArangeSets(data []byte) ([]Arange, []uint64, error) {
	var out []Arange
	var units []uint64
	var off uint64
	for off < uint64(len(data)) {
		r := NewCursor(".debug_aranges", data, off)
		length, is64 := r.InitialLength()
		if r.err != nil {
			return out, units, r.err
		}
		if length > r.Remaining() {
			return out, units, &FormatError{".debug_aranges", off, "set length runs past the section end"}
		}
		end := r.off + length
		version := r.U16()
		unit := r.SecOffset(is64)
		addrSize, segSize := r.U8(), r.U8()
		if r.err != nil {
			return out, units, r.err
		}
		if version != 2 || (addrSize != 4 && addrSize != 8) || segSize != 0 {
			return out, units, &FormatError{".debug_aranges", off, fmt.Sprintf("unsupported set (version %d, address size %d, segment size %d)", version, addrSize, segSize)}
		}
		units = append(units, unit)
		// Tuples are aligned to twice the address size from the set start.
		tuple := 2 * uint64(addrSize)
		if rem := (r.off - off) % tuple; rem != 0 {
			r.Skip(tuple - rem)
		}
		sub := NewCursor(".debug_aranges", data[:end], r.off)
		for sub.err == nil && sub.Remaining() >= tuple {
			lo, n := sub.Sized(addrSize), sub.Sized(addrSize)
			if lo == 0 && n == 0 {
				break
			}
			if n > 0 && lo+n > lo {
				out = append(out, Arange{Range{lo, lo + n}, unit})
			}
		}
		off = end
	}
	return out, units, nil
}
