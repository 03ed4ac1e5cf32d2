package memimage

import (
	"bytes"
	"testing"
)

// TestAddInOrderKeepsPublishedStates: sections added in address order are
// appended in place (insert); a state published before must read as it did,
// and a section placed between others, or over one, must still land in order.
func TestAddInOrderKeepsPublishedStates(t *testing.T) {
	im := New("t")
	sec := func(b byte) *Section {
		s, err := NewMemorySection("s", bytes.Repeat([]byte{b}, 0x100))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var states []*imageState
	for i := 0; i < 40; i++ {
		if err := im.Add(sec(byte(i)), AnyASID, uint64(0x1000+i*0x1000)); err != nil {
			t.Fatal(err)
		}
		states = append(states, im.state.Load())
	}
	// A section between two others, then one over the last: neither may
	// show in the states published before.
	if err := im.Add(sec(0xaa), AnyASID, 0x1800); err != nil {
		t.Fatal(err)
	}
	if err := im.Add(sec(0xbb), AnyASID, 0x28000); err != nil {
		t.Fatal(err)
	}
	for i, st := range states {
		n := 0
		for _, sp := range st.sections {
			n += len(sp.pieces)
			for j, p := range sp.pieces {
				if want := uint64(0x1000 + j*0x1000); p.begin != want {
					t.Fatalf("state %d piece %d at %#x, want %#x", i, j, p.begin, want)
				}
			}
		}
		if n != i+1 {
			t.Errorf("state %d has %d pieces, want %d", i, n, i+1)
		}
	}
	buf := make([]byte, 1)
	for addr, want := range map[uint64]byte{0x1000: 0, 0x1800: 0xaa, 0x2000: 1, 0x28000: 0xbb, 0x27000: 38} {
		if _, _, err := im.Read(buf, AnyASID, addr); err != nil || buf[0] != want {
			t.Errorf("byte at %#x: %#x (%v), want %#x", addr, buf[0], err, want)
		}
	}
	ms := im.Sections()
	for i := 1; i < len(ms); i++ {
		if ms[i].Begin < ms[i-1].Begin {
			t.Errorf("sections out of order: %#x after %#x", ms[i].Begin, ms[i-1].Begin)
		}
	}
}
