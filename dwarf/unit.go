package dwarf

import "fmt"

// Unit is one unit header of .debug_info (or .debug_types / their .dwo
// counterparts). Offsets are section offsets.
type Unit struct {
	Offset     uint64 // of the header
	DataOffset uint64 // of the first DIE
	End        uint64 // one past the unit's last byte
	Version    uint16
	Type       uint8 // UnitCompile... (DWARF 4 units are mapped onto these)
	Is64       bool
	AddrSize   uint8
	AbbrevOff  uint64
	Signature  uint64 // type units: type signature; skeleton/split units: DWO id
	TypeOffset uint64 // type units: section offset of the type DIE
}

// ReadUnits walks the unit headers of an info-like section. isTypes selects the
// DWARF 4 .debug_types header layout. On malformed input it returns the units
// read so far and an error: earlier units stay usable.
func ReadUnits(sec string, data []byte, isTypes bool) ([]Unit, error) {
	var units []Unit
	var off uint64
	for off < uint64(len(data)) {
		u, err := ReadUnitHeader(sec, data, off, isTypes)
		if err != nil {
			return units, err
		}
		units = append(units, u)
		off = u.End
	}
	return units, nil
}

// ReadUnitHeader decodes the unit header at off.
func ReadUnitHeader(sec string, data []byte, off uint64, isTypes bool) (Unit, error) {
	r := NewCursor(sec, data, off)
	u := Unit{Offset: off}
	length, is64 := r.InitialLength()
	if r.err != nil {
		return u, r.err
	}
	start := r.off
	if length > r.Remaining() {
		return u, &FormatError{sec, off, fmt.Sprintf("unit length %#x runs past the section end", length)}
	}
	u.End = start + length
	u.Is64 = is64
	u.Version = r.U16()
	switch {
	case u.Version >= 2 && u.Version <= 4:
		u.AbbrevOff = r.SecOffset(is64)
		u.AddrSize = r.U8()
		u.Type = UnitCompile
		if isTypes {
			u.Type = UnitType
			u.Signature = r.U64()
			u.TypeOffset = off + r.SecOffset(is64)
		}
	case u.Version == 5:
		u.Type = r.U8()
		u.AddrSize = r.U8()
		u.AbbrevOff = r.SecOffset(is64)
		switch u.Type {
		case UnitCompile, UnitPartial:
		case UnitSkeleton, UnitSplitCompile:
			u.Signature = r.U64()
		case UnitType, UnitSplitType:
			u.Signature = r.U64()
			u.TypeOffset = off + r.SecOffset(is64)
		default:
			return u, &FormatError{sec, off, fmt.Sprintf("unknown unit type %d", u.Type)}
		}
	default:
		return u, &FormatError{sec, off, fmt.Sprintf("unsupported DWARF version %d", u.Version)}
	}
	if r.err != nil {
		return u, r.err
	}
	if u.AddrSize != 4 && u.AddrSize != 8 {
		return u, &FormatError{sec, off, fmt.Sprintf("unsupported address size %d", u.AddrSize)}
	}
	u.DataOffset = r.off
	if u.DataOffset > u.End {
		return u, &FormatError{sec, off, "unit header longer than the unit"}
	}
	return u, nil
}
