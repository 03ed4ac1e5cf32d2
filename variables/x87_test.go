package variables

import (
	"encoding/binary"
	"testing"
)

// TestX87InvalidEncodings: an 80-bit value whose explicit integer bit is
// clear while its exponent is not zero is no number (the x87 refuses it):
// gdb prints <invalid float value>; the valid encodings around it print
// as numbers. The first case is the bytes of fmt's value union seen as a
// long double (a pointer in the low word).
func TestX87InvalidEncodings(t *testing.T) {
	for _, tc := range []struct {
		mant uint64
		se   uint16
		want string
	}{
		{0x00005555555abeb0, 0x5555, "<invalid float value>"}, // unnormal
		{0, 0x7fff, "<invalid float value>"},                  // pseudo-infinity
		{1 << 62, 0x7fff, "<invalid float value>"},            // pseudo-NaN
		{1 << 63, 0x3fff, "1"},
		{1 << 63, 0xbfff, "-1"},
		{1 << 63, 0x7fff, "inf"},
		{0, 0, "0"},
		{1, 0, "3.64519953188247460253e-4951"}, // a denormal: exponent 0, integer bit clear
	} {
		b := make([]byte, 10)
		binary.LittleEndian.PutUint64(b, tc.mant)
		binary.LittleEndian.PutUint16(b[8:], tc.se)
		if got := x87Text(b); got != tc.want {
			t.Errorf("x87Text(%#x, %#x) = %q, want %q", tc.mant, tc.se, got, tc.want)
		}
	}
}
