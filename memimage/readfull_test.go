package memimage

import (
	"bytes"
	"errors"
	"testing"
)

// TestReadFull checks that ReadFull loops across sections, the fallback and
// the overlay, and that on failure it says how many bytes are valid and which
// address failed, with the cause.
func TestReadFull(t *testing.T) {
	errIO := errors.New("EIO")
	im := New("full")
	applyAdds(t, im, []add{{"a", p1, 0x1000, 1}, {"b", p1, 0x1010, 2}, {"d8", p1, 0x1028, 3}})
	// The fallback serves [0x1020, 0x1028) in two short reads, fails with EIO
	// at 0x2000 and has nothing elsewhere.
	im.SetFallback(func(p []byte, _ ASID, addr uint64) (int, error) {
		switch {
		case addr >= 0x1020 && addr < 0x1028:
			n := min(len(p), 3)
			for i := range n {
				p[i] = 0xf0 + byte(addr-0x1020) + byte(i)
			}
			return n, nil
		case addr == 0x2000:
			return 0, errIO
		}
		return 0, &UnmappedError{Addr: addr}
	})
	if err := im.SetOriginal(p1, 0x1011, []byte{0x99}); err != nil {
		t.Fatal(err)
	}
	whole := append(append(append(seq(0xa0, 16), 0xb0, 0x99), seq(0xb2, 14)...), seq(0xf0, 8)...)
	whole = append(whole, seq(0xd0, 8)...)

	tests := []struct {
		name    string
		addr    uint64
		size    int
		valid   int
		failAt  uint64
		errIs   error
		failing bool
	}{
		{"across everything", 0x1000, len(whole), len(whole), 0, nil, false},
		{"past the end", 0x1000, len(whole) + 4, len(whole), 0x1030, ErrNoMap, true},
		{"starts unmapped", 0xff0, 4, 0, 0xff0, ErrNoMap, true},
		{"fallback error", 0x2000, 4, 0, 0x2000, errIO, true},
		{"empty", 0x5, 0, 0, 0, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := make([]byte, tt.size)
			n, err := im.ReadFull(buf, p1, tt.addr)
			if n != tt.valid {
				t.Errorf("valid = %d, want %d", n, tt.valid)
			}
			if tt.addr == 0x1000 && !bytes.Equal(buf[:n], whole[:n]) {
				t.Errorf("bytes = % x\nwant    % x", buf[:n], whole[:n])
			}
			if !tt.failing {
				if err != nil {
					t.Errorf("err = %v", err)
				}
				return
			}
			var re *ReadError
			if !errors.As(err, &re) || re.Addr != tt.failAt || re.Valid != tt.valid || re.ASID != p1 || !errors.Is(err, tt.errIs) {
				t.Errorf("err = %v; want a ReadError at %#x after %d bytes wrapping %v", err, tt.failAt, tt.valid, tt.errIs)
			}
		})
	}

	r := im.ReaderAt(p1)
	buf := make([]byte, 8)
	if n, err := r.ReadAt(buf, 0x100c); n != 8 || err != nil || !bytes.Equal(buf, whole[0xc:0x14]) {
		t.Errorf("ReaderAt.ReadAt = %d, %v, % x", n, err, buf)
	}
	if _, err := r.ReadAt(buf, -8); err == nil {
		t.Error("ReadAt at a negative offset succeeded")
	}
}

// TestReadFullWrap checks that ReadFull stops at the top of the address space
// instead of wrapping to address 0.
func TestReadFullWrap(t *testing.T) {
	im := New("wrap")
	im.SetFallback(func(p []byte, _ ASID, _ uint64) (int, error) { return len(p), nil })
	n, err := im.ReadFull(make([]byte, 8), p1, ^uint64(0)-3)
	var re *ReadError
	if n != 3 || !errors.As(err, &re) || re.Addr != ^uint64(0) {
		t.Errorf("ReadFull across 2^64 = %d, %v; want 3 valid and a failure at %#x", n, err, ^uint64(0))
	}
}
