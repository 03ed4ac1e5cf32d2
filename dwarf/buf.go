package dwarf

import (
	"encoding/binary"
	"fmt"

	"github.com/sondedbg/sonde/internal/leb128"
)

// FormatError reports malformed DWARF: which section, at which offset, and what.
type FormatError struct {
	Section string
	Offset  uint64
	Msg     string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("dwarf: %s at offset %#x: %s", e.Section, e.Offset, e.Msg)
}

// reader is a bounds-checked little-endian cursor over one section. The first
// error sticks: later reads return zero values, so callers check err once
// after a group of reads.
type reader struct {
	sec  string
	data []byte
	off  uint64
	err  error
}

func newReader(sec string, data []byte, off uint64) reader {
	r := reader{sec: sec, data: data, off: off}
	if off > uint64(len(data)) {
		r.fail("offset past end of section")
	}
	return r
}

func (r *reader) fail(msg string) {
	if r.err == nil {
		r.err = &FormatError{Section: r.sec, Offset: r.off, Msg: msg}
	}
	r.off = uint64(len(r.data))
}

func (r *reader) remaining() uint64 {
	if r.off >= uint64(len(r.data)) {
		return 0
	}
	return uint64(len(r.data)) - r.off
}

func (r *reader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > r.remaining() {
		r.fail("unexpected end of data")
		return nil
	}
	b := r.data[r.off : r.off+n]
	r.off += n
	return b
}

func (r *reader) skip(n uint64) { r.bytes(n) }

func (r *reader) u8() uint8 {
	if r.err == nil && r.off < uint64(len(r.data)) {
		v := r.data[r.off]
		r.off++
		return v
	}
	r.fail("unexpected end of data")
	return 0
}

func (r *reader) u16() uint16 {
	b := r.bytes(2)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(b)
}

func (r *reader) u24() uint32 {
	b := r.bytes(3)
	if b == nil {
		return 0
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
}

func (r *reader) u32() uint32 {
	b := r.bytes(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *reader) u64() uint64 {
	b := r.bytes(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// sized reads an unsigned value of 1, 2, 4 or 8 bytes.
func (r *reader) sized(n uint8) uint64 {
	switch n {
	case 1:
		return uint64(r.u8())
	case 2:
		return uint64(r.u16())
	case 4:
		return uint64(r.u32())
	case 8:
		return r.u64()
	}
	r.fail(fmt.Sprintf("unsupported value size %d", n))
	return 0
}

func (r *reader) uleb() uint64 {
	if r.err != nil || r.off > uint64(len(r.data)) {
		return 0
	}
	v, n := leb128.Uint(r.data[r.off:])
	if n == 0 {
		r.fail("truncated LEB128")
		return 0
	}
	r.off += uint64(n)
	return v
}

func (r *reader) sleb() int64 {
	if r.err != nil || r.off > uint64(len(r.data)) {
		return 0
	}
	v, n := leb128.Int(r.data[r.off:])
	if n == 0 {
		r.fail("truncated LEB128")
		return 0
	}
	r.off += uint64(n)
	return v
}

// cstring returns the NUL-terminated string at the cursor, without the NUL.
func (r *reader) cstring() []byte {
	if r.err != nil {
		return nil
	}
	rest := r.data[r.off:]
	for i, c := range rest {
		if c == 0 {
			r.off += uint64(i) + 1
			return rest[:i]
		}
	}
	r.fail("unterminated string")
	return nil
}

// initialLength reads a unit length, detecting the 64-bit DWARF escape.
func (r *reader) initialLength() (length uint64, is64 bool) {
	l := r.u32()
	switch {
	case l == 0xffffffff:
		return r.u64(), true
	case l >= 0xfffffff0:
		r.fail(fmt.Sprintf("reserved unit length %#x", l))
		return 0, false
	}
	return uint64(l), false
}

func (r *reader) offset(is64 bool) uint64 {
	if is64 {
		return r.u64()
	}
	return uint64(r.u32())
}

// CString returns the NUL-terminated string at off in data (a string section).
func CString(sec string, data []byte, off uint64) (string, error) {
	r := newReader(sec, data, off)
	s := r.cstring()
	if r.err != nil {
		return "", r.err
	}
	return string(s), nil
}
