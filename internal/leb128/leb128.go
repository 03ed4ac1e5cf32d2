// Package leb128 decodes (and encodes) the variable-length integers of DWARF and of the
// exception-handling frame format (LEB128). Every parser of those formats in
// sonde — CFI, DWARF expressions, DWARF debug information — uses it, so the
// rules for hostile input live in one place: a value that runs past the end
// of the input is reported as truncated (n == 0), and bits beyond 64 are
// dropped rather than wrapping into the value.
package leb128

// Uint decodes an unsigned LEB128 value at the start of b. n is the number of
// bytes it took, 0 if b ends before the value does.
func Uint(b []byte) (v uint64, n int) {
	var shift uint
	for i, c := range b {
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// Int decodes a signed LEB128 value at the start of b. n is the number of
// bytes it took, 0 if b ends before the value does.
func Int(b []byte) (v int64, n int) {
	var shift uint
	for i, c := range b {
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v, i + 1
		}
	}
	return 0, 0
}

// AppendUint appends the unsigned LEB128 encoding of v to b, for what
// writes DWARF or CFI (tests build their inputs with it).
func AppendUint(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// AppendInt appends the signed LEB128 encoding of v to b.
func AppendInt(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
