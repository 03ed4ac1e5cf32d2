package cfi

import (
	"encoding/binary"

	"github.com/sondedbg/sonde/internal/leb128"
)

// Pointer encodings (DW_EH_PE_*).
const (
	EncAbsptr   = 0x00
	EncULEB128  = 0x01
	EncUdata2   = 0x02
	EncUdata4   = 0x03
	EncUdata8   = 0x04
	EncSLEB128  = 0x09
	EncSdata2   = 0x0a
	EncSdata4   = 0x0b
	EncSdata8   = 0x0c
	EncPCRel    = 0x10
	EncTextRel  = 0x20
	EncDataRel  = 0x30
	EncFuncRel  = 0x40
	EncAligned  = 0x50
	EncIndirect = 0x80
	EncOmit     = 0xff
)

// buf decodes one section with bounds checks; errors are sticky.
type buf struct {
	b   []byte
	off int
	end int // limit of the current entry
	bad bool
}

func (d *buf) avail() int { return d.end - d.off }

func (d *buf) u8() uint8 {
	if d.off >= d.end {
		d.bad = true
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *buf) fixed(n int) uint64 {
	if n > d.avail() || n < 0 {
		d.bad = true
		d.off = d.end
		return 0
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	switch n {
	case 1:
		return uint64(p[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(p))
	case 4:
		return uint64(binary.LittleEndian.Uint32(p))
	case 8:
		return binary.LittleEndian.Uint64(p)
	}
	d.bad = true
	return 0
}

func (d *buf) uleb() uint64 {
	v, n := leb128.Uint(d.b[d.off:d.end])
	if n == 0 {
		d.bad = true
		d.off = d.end
	}
	d.off += n
	return v
}

func (d *buf) sleb() int64 {
	v, n := leb128.Int(d.b[d.off:d.end])
	if n == 0 {
		d.bad = true
		d.off = d.end
	}
	d.off += n
	return v
}

// augmentation reads the CIE augmentation string without allocating for the
// strings compilers emit.
func (d *buf) augmentation() string {
	s := d.cstring0()
	switch string(s) {
	case "":
		return ""
	case "zR":
		return "zR"
	case "zPLR":
		return "zPLR"
	case "zRS":
		return "zRS"
	case "zPR":
		return "zPR"
	case "zLR":
		return "zLR"
	}
	return string(s)
}

func (d *buf) cstring0() []byte {
	for i := d.off; i < d.end; i++ {
		if d.b[i] == 0 {
			s := d.b[d.off:i]
			d.off = i + 1
			return s
		}
	}
	d.bad = true
	d.off = d.end
	return nil
}

// pointerBases are the addresses the relative pointer encodings add.
type pointerBases struct {
	section uint64 // address of byte 0 of the data being decoded (pcrel)
	text    uint64
	data    uint64
	funcAt  uint64
}

// pointer decodes one DW_EH_PE-encoded value. Indirect pointers are returned
// undereferenced with indirect=true (the caller decides whether it needs the
// target's memory).
func (d *buf) pointer(enc uint8, addrSize int, bases *pointerBases) (v uint64, indirect bool, ok bool) {
	if enc == EncOmit {
		return 0, false, true
	}
	pos := uint64(d.off)
	if enc&0x70 == EncAligned {
		// Aligned to the address, not to the section offset.
		at := bases.section + uint64(d.off)
		pad := int((uint64(addrSize) - at%uint64(addrSize)) % uint64(addrSize))
		if pad > d.avail() {
			d.bad = true
			return 0, false, false
		}
		d.off += pad
		pos = uint64(d.off)
	}
	switch enc & 0x0f {
	case EncAbsptr:
		v = d.fixed(addrSize)
	case EncULEB128:
		v = d.uleb()
	case EncUdata2:
		v = d.fixed(2)
	case EncUdata4:
		v = d.fixed(4)
	case EncUdata8:
		v = d.fixed(8)
	case EncSLEB128:
		v = uint64(d.sleb())
	case EncSdata2:
		v = uint64(int64(int16(d.fixed(2))))
	case EncSdata4:
		v = uint64(int64(int32(d.fixed(4))))
	case EncSdata8:
		v = d.fixed(8)
	default:
		return 0, false, false
	}
	switch enc & 0x70 {
	case 0, EncAligned:
	case EncPCRel:
		v += bases.section + pos
	case EncTextRel:
		v += bases.text
	case EncDataRel:
		v += bases.data
	case EncFuncRel:
		v += bases.funcAt
	default:
		return 0, false, false
	}
	if addrSize == 4 {
		v &= 0xffffffff
	}
	return v, enc&EncIndirect != 0, !d.bad
}
