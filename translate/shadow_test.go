package translate

import (
	"bytes"
	"testing"
)

func TestShadow(t *testing.T) {
	var s Shadow
	mem := []byte{0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0xc3} // the application's bytes at 0x1000
	raw := append([]byte(nil), mem...)
	raw[0], raw[4] = 0xcc, 0xcc
	s.Patch(0x1000, mem[0:1], []byte{0xcc}, "breakpoint")
	s.Patch(0x1004, mem[4:5], []byte{0xcc}, "breakpoint")
	if s.Len() != 2 || s.Owner(0x1004) != "breakpoint" || s.Owner(0x1001) != "" {
		t.Fatalf("len %d", s.Len())
	}
	for _, span := range [][2]int{{0, 7}, {1, 5}, {4, 5}, {0, 1}} {
		buf := append([]byte(nil), raw[span[0]:span[1]]...)
		s.Hide(0x1000+uint64(span[0]), buf)
		if !bytes.Equal(buf, mem[span[0]:span[1]]) {
			t.Errorf("read %v: % x, want % x", span, buf, mem[span[0]:span[1]])
		}
	}
	// A client writes over the second patch: the patch stays, the original
	// is the new byte.
	var changed []uint64
	out := s.Write(0x1003, []byte{0x11, 0x22, 0x33}, func(a uint64, o byte) { changed = append(changed, a) })
	if !bytes.Equal(out, []byte{0x11, 0xcc, 0x33}) || len(changed) != 1 || changed[0] != 0x1004 {
		t.Fatalf("write: % x %v", out, changed)
	}
	if o, ok := s.Original(0x1004); !ok || o != 0x22 {
		t.Fatalf("original %x %v", o, ok)
	}
	if got := s.Unpatch(0x1004, 1); !bytes.Equal(got, []byte{0x22}) || s.Len() != 1 {
		t.Fatalf("unpatch % x", got)
	}
	n := 0
	s.Each(func(a uint64, o byte) {
		if a != 0x1000 || o != 0x55 {
			t.Errorf("each %x %x", a, o)
		}
		n++
	})
	s.Reset()
	if n != 1 || s.Len() != 0 {
		t.Fatal("reset")
	}
}
