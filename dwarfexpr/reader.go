package dwarfexpr

import (
	"encoding/binary"

	"github.com/sondedbg/sonde/internal/leb128"
)

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
	v, n := leb128.Uint(r.b[r.off:])
	if n == 0 {
		r.bad = true
		r.off = len(r.b)
	}
	r.off += n
	return v
}

func (r *reader) sleb() int64 {
	v, n := leb128.Int(r.b[r.off:])
	if n == 0 {
		r.bad = true
		r.off = len(r.b)
	}
	r.off += n
	return v
}

func sext(v uint64, size int) int64 {
	if size >= 8 {
		return int64(v)
	}
	s := uint(64 - 8*size)
	return int64(v<<s) >> s
}
