package memimage

import "testing"

// TestRemove checks RemoveFile and RemoveASID: what they remove, what they
// count (every piece of a split section), and what they leave alone.
func TestRemove(t *testing.T) {
	base := []add{
		{"a", p1, 0x1000, 1}, {"d8", p1, 0x1004, 2}, // a is split in two
		{"a", p2, 0x1000, 3}, {"b", p2, 0x2000, 4},
		{"c", AnyASID, 0x3000, 5},
	}
	tests := []struct {
		name    string
		remove  func(*Image) int
		want    int
		visible []read // what must still be there
		gone    []read // what must be gone
	}{
		{"file in one space", func(im *Image) int { return im.RemoveFile("a", p1) }, 2,
			[]read{{asid: p2, addr: 0x1000, size: 1, want: []byte{0xa0}, id: 3},
				{asid: p1, addr: 0x1004, size: 1, want: []byte{0xd0}, id: 2}},
			[]read{{asid: p1, addr: 0x1000, size: 1, err: ErrNoMap}, {asid: p1, addr: 0x100c, size: 1, err: ErrNoMap}}},
		{"file in every space", func(im *Image) int { return im.RemoveFile("a", AnyASID) }, 3,
			[]read{{asid: p1, addr: 0x1004, size: 1, want: []byte{0xd0}, id: 2}},
			[]read{{asid: p2, addr: 0x1000, size: 1, err: ErrNoMap}}},
		{"file nobody has", func(im *Image) int { return im.RemoveFile("zz", AnyASID) }, 0,
			[]read{{asid: p1, addr: 0x1000, size: 1, want: []byte{0xa0}, id: 1}}, nil},
		{"file in a space that does not hold it", func(im *Image) int { return im.RemoveFile("b", p1) }, 0,
			[]read{{asid: p2, addr: 0x2000, size: 1, want: []byte{0xb0}, id: 4}}, nil},
		{"wildcard section goes with a specific asid", func(im *Image) int { return im.RemoveFile("c", p1) }, 1,
			nil, []read{{asid: p2, addr: 0x3000, size: 1, err: ErrNoMap}}},
		{"asid", func(im *Image) int { return im.RemoveASID(p2) }, 3, // a and b of p2, and c (matches)
			[]read{{asid: p1, addr: 0x1000, size: 1, want: []byte{0xa0}, id: 1}},
			[]read{{asid: p2, addr: 0x2000, size: 1, err: ErrNoMap}, {asid: p1, addr: 0x3000, size: 1, err: ErrNoMap}}},
		{"all", func(im *Image) int { return im.RemoveASID(AnyASID) }, 6,
			nil, []read{{asid: AnyASID, addr: 0x1000, size: 1, err: ErrNoMap}}},
		{"asid nobody has", func(im *Image) int { return im.RemoveASID(ASID{9, 9}) }, 1, // only c matches
			[]read{{asid: p1, addr: 0x1000, size: 1, want: []byte{0xa0}, id: 1}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			im := New(tt.name)
			applyAdds(t, im, base)
			if got := tt.remove(im); got != tt.want {
				t.Errorf("removed %d, want %d", got, tt.want)
			}
			checkReads(t, im, tt.visible)
			checkReads(t, im, tt.gone)
		})
	}
}

// TestCopy checks Copy: the source's sections win over the destination's, keep
// their IDs and their order among themselves; the overlay comes along, the
// fallback does not; copying into itself changes nothing.
func TestCopy(t *testing.T) {
	tests := []struct {
		name    string
		dst     []add
		src     []add
		reads   []read
		srcSelf bool
	}{
		{"into empty", nil, []add{{"a", p1, 0x1000, 1}, {"b", p2, 0x2000, 2}}, []read{
			{asid: p1, addr: 0x1003, size: 2, want: []byte{0xa3, 0xa4}, id: 1},
			{asid: p2, addr: 0x2003, size: 2, want: []byte{0xb3, 0xb4}, id: 2},
		}, false},
		{"empty source", []add{{"a", p1, 0x1000, 1}}, nil, []read{
			{asid: p1, addr: 0x1003, size: 1, want: []byte{0xa3}, id: 1},
		}, false},
		{"into itself", nil, []add{{"a", p1, 0x1000, 1}}, []read{
			{asid: p1, addr: 0x1003, size: 1, want: []byte{0xa3}, id: 1},
		}, true},
		{"source replaces", []add{{"d8", p1, 0x1004, 1}}, []add{{"a", p1, 0x1000, 2}}, []read{
			{asid: p1, addr: 0x1003, size: 2, want: []byte{0xa3, 0xa4}, id: 2},
		}, false},
		{"source splits", []add{{"a", p1, 0x2000, 1}}, []add{{"e2", p1, 0x2004, 2}, {"d8", p1, 0x2008, 3}}, []read{
			{asid: p1, addr: 0x2000, size: 16, want: seq(0xa0, 4), id: 1},
			{asid: p1, addr: 0x2004, size: 16, want: seq(0xe0, 2), id: 2},
			{asid: p1, addr: 0x2006, size: 16, want: seq(0xa6, 2), id: 1},
			{asid: p1, addr: 0x2008, size: 16, want: seq(0xd0, 8), id: 3},
		}, false},
		{"source order is kept", nil, []add{{"a", p1, 0x1000, 1}, {"d8", p1, 0x1004, 2}, {"b", p2, 0x1000, 3}}, []read{
			{asid: p1, addr: 0x1004, size: 16, want: seq(0xd0, 8), id: 2},
			{asid: p1, addr: 0x100c, size: 16, want: seq(0xac, 4), id: 1},
			{asid: AnyASID, addr: 0x1004, size: 1, want: []byte{0xb4}, id: 3},
		}, false},
		{"source pieces cover destination", []add{{"a", p1, 0x2000, 1}, {"b", p1, 0x2010, 2}}, []add{{"c", p1, 0x2008, 3}}, []read{
			{asid: p1, addr: 0x2003, size: 1, want: []byte{0xa3}, id: 1},
			{asid: p1, addr: 0x200a, size: 1, want: []byte{0xc2}, id: 3},
			{asid: p1, addr: 0x2016, size: 1, want: []byte{0xce}, id: 3},
			{asid: p1, addr: 0x2019, size: 1, want: []byte{0xb9}, id: 2},
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := New("dst")
			applyAdds(t, dst, tt.dst)
			src := dst
			if !tt.srcSelf {
				src = New("src")
			}
			applyAdds(t, src, tt.src)
			before := len(src.Sections())
			if skipped := dst.Copy(src); skipped != 0 {
				t.Errorf("Copy skipped %d", skipped)
			}
			if after := len(src.Sections()); after != before {
				t.Errorf("Copy changed its source: %d sections, was %d", after, before)
			}
			checkReads(t, dst, tt.reads)
		})
	}

	t.Run("overlay and fallback", func(t *testing.T) {
		src, dst := New("parent"), New("child")
		src.SetFallback(func(p []byte, _ ASID, _ uint64) (int, error) { return len(p), nil })
		if err := src.SetOriginal(AnyASID, 0x10, []byte{0x90}); err != nil {
			t.Fatal(err)
		}
		dst.Copy(src)
		checkReads(t, dst, []read{
			{asid: p1, addr: 0x10, size: 4, want: []byte{0x90}},
			{asid: p1, addr: 0x11, size: 4, err: ErrNoMap},
		})
	})
}
