package dwarfexpr

import "encoding/binary"

// reader decodes operands of one expression with bounds checks.
type reader struct {
	b   []byte
	off int
	bad bool
}

func (r *reader) u8() uint8 {
	if r.off >= len(r.b) {
		r.bad = true
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *reader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)-r.off) {
		r.bad = true
		r.off = len(r.b)
		return nil
	}
	v := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return v
}

func (r *reader) fixed(n int) uint64 {
	b := r.bytes(uint64(n))
	if b == nil {
		return 0
	}
	switch n {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func (r *reader) uleb() uint64 {
	var v uint64
	var shift uint
	for {
		if r.off >= len(r.b) {
			r.bad = true
			return 0
		}
		c := r.b[r.off]
		r.off++
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			return v
		}
	}
}

func (r *reader) sleb() int64 {
	var v int64
	var shift uint
	for {
		if r.off >= len(r.b) {
			r.bad = true
			return 0
		}
		c := r.b[r.off]
		r.off++
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

func sext(v uint64, size int) int64 {
	if size >= 8 {
		return int64(v)
	}
	s := uint(64 - 8*size)
	return int64(v<<s) >> s
}
