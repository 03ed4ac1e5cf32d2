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

// Cursor is the module's one bounds-checked little-endian cursor over DWARF
// bytes (a section, or one expression or block). The first error sticks:
// later reads return zero values and the cursor moves to the end, so callers
// check Err once after a group of reads.
type Cursor struct {
	sec  string
	data []byte
	off  uint64
	err  error
}

// NewCursor starts a cursor at off in data; sec names the section in errors.
func NewCursor(sec string, data []byte, off uint64) Cursor {
	r := Cursor{sec: sec, data: data, off: off}
	if off > uint64(len(data)) {
		r.Fail("offset past end of section")
	}
	return r
}

// Err returns the first error the cursor met, or nil.
func (r *Cursor) Err() error { return r.err }

// Pos returns the cursor's offset.
func (r *Cursor) Pos() uint64 { return r.off }

// Fail records a format error at the cursor (unless one is recorded) and
// moves the cursor to the end.
func (r *Cursor) Fail(msg string) {
	if r.err == nil {
		r.err = &FormatError{Section: r.sec, Offset: r.off, Msg: msg}
	}
	r.off = uint64(len(r.data))
}

// Remaining returns the number of bytes after the cursor.
func (r *Cursor) Remaining() uint64 {
	if r.off >= uint64(len(r.data)) {
		return 0
	}
	return uint64(len(r.data)) - r.off
}

// Bytes returns the next n bytes (nil past the end).
func (r *Cursor) Bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > r.Remaining() {
		r.Fail("unexpected end of data")
		return nil
	}
	b := r.data[r.off : r.off+n]
	r.off += n
	return b
}

// Skip moves past n bytes.
func (r *Cursor) Skip(n uint64) { r.Bytes(n) }

// U8 reads a byte.
func (r *Cursor) U8() uint8 {
	if r.err == nil && r.off < uint64(len(r.data)) {
		v := r.data[r.off]
		r.off++
		return v
	}
	r.Fail("unexpected end of data")
	return 0
}

// U16 reads a 2-byte value.
func (r *Cursor) U16() uint16 {
	b := r.Bytes(2)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(b)
}

// U24 reads a 3-byte value (DW_FORM_strx3, addrx3).
func (r *Cursor) U24() uint32 {
	b := r.Bytes(3)
	if b == nil {
		return 0
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
}

// U32 reads a 4-byte value.
func (r *Cursor) U32() uint32 {
	b := r.Bytes(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

// U64 reads an 8-byte value.
func (r *Cursor) U64() uint64 {
	b := r.Bytes(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// Sized reads an unsigned value of 1, 2, 4 or 8 bytes.
func (r *Cursor) Sized(n uint8) uint64 {
	if n == 3 { // fixed reads 3 bytes (strx3, addrx3); nothing else is that size
		r.Fail("unsupported value size 3")
		return 0
	}
	return r.fixed(n)
}

// fixed reads an unsigned value of 1, 2, 3, 4 or 8 bytes.
func (r *Cursor) fixed(n uint8) uint64 {
	switch n {
	case 1:
		return uint64(r.U8())
	case 2:
		return uint64(r.U16())
	case 3:
		return uint64(r.U24())
	case 4:
		return uint64(r.U32())
	case 8:
		return r.U64()
	}
	r.Fail(fmt.Sprintf("unsupported value size %d", n))
	return 0
}

// Uleb reads an unsigned LEB128 number.
func (r *Cursor) Uleb() uint64 {
	if r.err != nil || r.off > uint64(len(r.data)) {
		return 0
	}
	v, n := leb128.Uint(r.data[r.off:])
	if n == 0 {
		r.Fail("truncated LEB128")
		return 0
	}
	r.off += uint64(n)
	return v
}

// Sleb reads a signed LEB128 number.
func (r *Cursor) Sleb() int64 {
	if r.err != nil || r.off > uint64(len(r.data)) {
		return 0
	}
	v, n := leb128.Int(r.data[r.off:])
	if n == 0 {
		r.Fail("truncated LEB128")
		return 0
	}
	r.off += uint64(n)
	return v
}

// CStr returns the NUL-terminated string at the cursor, without the NUL.
func (r *Cursor) CStr() []byte {
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
	r.Fail("unterminated string")
	return nil
}

// InitialLength reads a unit length, detecting the 64-bit DWARF escape.
func (r *Cursor) InitialLength() (length uint64, is64 bool) {
	l := r.U32()
	switch {
	case l == 0xffffffff:
		return r.U64(), true
	case l >= 0xfffffff0:
		r.Fail(fmt.Sprintf("reserved unit length %#x", l))
		return 0, false
	}
	return uint64(l), false
}

// SecOffset reads a section offset: 4 bytes, or 8 in 64-bit DWARF.
func (r *Cursor) SecOffset(is64 bool) uint64 {
	if is64 {
		return r.U64()
	}
	return uint64(r.U32())
}

// CString returns the NUL-terminated string at off in data (a string section).
func CString(sec string, data []byte, off uint64) (string, error) {
	r := NewCursor(sec, data, off)
	s := r.CStr()
	if r.err != nil {
		return "", r.err
	}
	return string(s), nil
}
