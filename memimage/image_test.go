package memimage

import (
	"errors"
	"testing"
)

// TestAddRead checks the placement rules: the newest section wins and shrinks,
// splits or removes older ones in matching address spaces; split pieces keep
// their IDs; reads stop at every section boundary.
func TestAddRead(t *testing.T) {
	tests := []struct {
		name  string
		adds  []add
		reads []read
	}{
		{"empty", nil, []read{
			{asid: p1, addr: 0x1000, size: 2, err: ErrNoMap},
			{asid: AnyASID, addr: 0, size: 1, err: ErrNoMap},
		}},
		{"single", []add{{"a", p1, 0x1000, 1}}, []read{
			{asid: p1, addr: 0x1000, size: 2, want: seq(0xa0, 2), id: 1},
			{asid: p1, addr: 0x100e, size: 4, want: seq(0xae, 2), id: 1}, // short at the end
			{asid: p1, addr: 0x1000, size: 64, want: seq(0xa0, 16), id: 1},
			{asid: p1, addr: 0x1010, size: 1, err: ErrNoMap},
			{asid: p1, addr: 0xfff, size: 1, err: ErrNoMap},
		}},
		{"new overlaps the front of old", []add{{"a", p1, 0x1001, 1}, {"b", p1, 0x1000, 2}}, []read{
			{asid: p1, addr: 0x1000, size: 32, want: seq(0xb0, 16), id: 2},
			{asid: p1, addr: 0x100f, size: 2, want: []byte{0xbf}, id: 2},
			{asid: p1, addr: 0x1010, size: 2, want: []byte{0xaf}, id: 1},
			{asid: p1, addr: 0x1011, size: 1, err: ErrNoMap},
		}},
		{"new overlaps the back of old", []add{{"a", p1, 0x1000, 1}, {"b", p1, 0x1001, 2}}, []read{
			{asid: p1, addr: 0x1000, size: 2, want: []byte{0xa0}, id: 1},
			{asid: p1, addr: 0x1001, size: 1, want: []byte{0xb0}, id: 2},
			{asid: p1, addr: 0x1010, size: 4, want: []byte{0xbf}, id: 2},
		}},
		{"new splits old in the middle", []add{{"a", p1, 0x1000, 1}, {"d8", p1, 0x1004, 2}}, []read{
			{asid: p1, addr: 0x1000, size: 16, want: seq(0xa0, 4), id: 1},
			{asid: p1, addr: 0x1004, size: 16, want: seq(0xd0, 8), id: 2},
			{asid: p1, addr: 0x100c, size: 16, want: seq(0xac, 4), id: 1},
		}},
		{"new spans several old", []add{
			{"a", p1, 0x1000, 1}, {"b", p1, 0x1010, 2}, {"c", p1, 0x1008, 3},
		}, []read{
			{asid: p1, addr: 0x1007, size: 2, want: []byte{0xa7}, id: 1},
			{asid: p1, addr: 0x1008, size: 32, want: seq(0xc0, 16), id: 3},
			{asid: p1, addr: 0x1018, size: 32, want: seq(0xb8, 8), id: 2},
		}},
		{"new contains old", []add{{"d8", p1, 0x1004, 1}, {"a", p1, 0x1000, 2}}, []read{
			{asid: p1, addr: 0x1000, size: 32, want: seq(0xa0, 16), id: 2},
		}},
		{"new contains several old", []add{
			{"e2", p1, 0x1004, 1}, {"e2", p1, 0x1008, 2}, {"e2", p1, 0x100e, 3}, {"a", p1, 0x1000, 4},
		}, []read{
			{asid: p1, addr: 0x1000, size: 32, want: seq(0xa0, 16), id: 4},
		}},
		{"old sticks out behind new", []add{
			{"d8", p1, 0x1004, 1}, {"d8", p1, 0x100c, 2}, {"a", p1, 0x1000, 3},
		}, []read{
			{asid: p1, addr: 0x1004, size: 1, want: []byte{0xa4}, id: 3},
			{asid: p1, addr: 0x100f, size: 2, want: []byte{0xaf}, id: 3},
			{asid: p1, addr: 0x1010, size: 8, want: seq(0xd4, 4), id: 2},
		}},
		{"same section same place twice", []add{{"a", p1, 0x1000, 1}, {"a", p1, 0x1000, 1}}, []read{
			{asid: p1, addr: 0x1008, size: 1, want: []byte{0xa8}, id: 1},
		}},
		{"same place, newer ID wins", []add{{"a", p1, 0x1000, 1}, {"a", p1, 0x1000, 2}}, []read{
			{asid: p1, addr: 0x1008, size: 1, want: []byte{0xa8}, id: 2},
		}},
		{"adjacent sections stay whole", []add{
			{"a", p1, 0x1000, 1}, {"b", p1, 0xff0, 2}, {"c", p1, 0x1010, 3},
		}, []read{
			{asid: p1, addr: 0xff0, size: 64, want: seq(0xb0, 16), id: 2},
			{asid: p1, addr: 0x1000, size: 64, want: seq(0xa0, 16), id: 1},
			{asid: p1, addr: 0x1010, size: 64, want: seq(0xc0, 16), id: 3},
		}},
		{"address spaces are separate", []add{{"a", p1, 0x1000, 1}, {"b", p2, 0x1000, 2}}, []read{
			{asid: p1, addr: 0x1000, size: 1, want: []byte{0xa0}, id: 1},
			{asid: p2, addr: 0x1000, size: 1, want: []byte{0xb0}, id: 2},
			{asid: ASID{3, 1}, addr: 0x1000, size: 1, err: ErrNoMap},
			{asid: ASID{1, 2}, addr: 0x1000, size: 1, err: ErrNoMap},
			// A wildcard reader sees both; the newer one wins.
			{asid: AnyASID, addr: 0x1000, size: 1, want: []byte{0xb0}, id: 2},
			{asid: ASID{Wildcard, 1}, addr: 0x1000, size: 1, want: []byte{0xb0}, id: 2},
			{asid: p1g, addr: 0x1000, size: 1, want: []byte{0xa0}, id: 1},
		}},
		{"wildcard reader stops where a newer section of another space starts", []add{
			{"a", p1, 0x1000, 1}, {"d8", p2, 0x1008, 2}, {"e2", p2, 0x0ff8, 3},
		}, []read{
			{asid: AnyASID, addr: 0x1000, size: 32, want: seq(0xa0, 8), id: 1},
			{asid: AnyASID, addr: 0x1008, size: 32, want: seq(0xd0, 8), id: 2},
			{asid: p1, addr: 0x1000, size: 32, want: seq(0xa0, 16), id: 1},
		}},
		{"wildcard reader is not stopped by an older section", []add{
			{"d8", p2, 0x1008, 2}, {"a", p1, 0x1000, 1},
		}, []read{
			{asid: AnyASID, addr: 0x1000, size: 32, want: seq(0xa0, 16), id: 1},
		}},
		{"a section for every space splits all of them", []add{
			{"a", p1, 0x1000, 1}, {"b", p2, 0x1000, 2}, {"e2", AnyASID, 0x1004, 3},
		}, []read{
			{asid: p1, addr: 0x1000, size: 16, want: seq(0xa0, 4), id: 1},
			{asid: p1, addr: 0x1004, size: 16, want: seq(0xe0, 2), id: 3},
			{asid: p1, addr: 0x1006, size: 16, want: seq(0xa6, 10), id: 1},
			{asid: p2, addr: 0x1004, size: 16, want: seq(0xe0, 2), id: 3},
			{asid: p2, addr: 0x1006, size: 16, want: seq(0xb6, 10), id: 2},
			{asid: ASID{7, 7}, addr: 0x1004, size: 16, want: seq(0xe0, 2), id: 3},
			{asid: ASID{7, 7}, addr: 0x1000, size: 16, err: ErrNoMap},
		}},
		{"partial wildcards match field by field", []add{
			{"a", p1g, 0x1000, 1}, {"d8", g2, 0x1004, 2},
		}, []read{
			{asid: ASID{1, 2}, addr: 0x1004, size: 16, want: seq(0xd0, 8), id: 2},
			{asid: ASID{1, 3}, addr: 0x1000, size: 16, want: seq(0xa0, 4), id: 1},
			{asid: ASID{1, 3}, addr: 0x1004, size: 16, err: ErrNoMap},
			{asid: ASID{1, 3}, addr: 0x100c, size: 16, want: seq(0xac, 4), id: 1},
			{asid: ASID{5, 2}, addr: 0x1004, size: 16, want: seq(0xd0, 8), id: 2},
			{asid: ASID{5, 2}, addr: 0x1000, size: 16, err: ErrNoMap},
		}},
		{"an older non-matching section survives", []add{
			{"a", ASID{1, 1}, 0x1000, 1}, {"b", ASID{1, 2}, 0x1000, 2},
		}, []read{
			{asid: ASID{1, 1}, addr: 0x1000, size: 1, want: []byte{0xa0}, id: 1},
			{asid: ASID{1, 2}, addr: 0x1000, size: 1, want: []byte{0xb0}, id: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			im := New(tt.name)
			applyAdds(t, im, tt.adds)
			checkReads(t, im, tt.reads)
		})
	}
}

// TestSectionsList checks that Sections reports the visible pieces with their
// offsets into the section.
func TestSectionsList(t *testing.T) {
	im := New("list")
	applyAdds(t, im, []add{{"a", p1, 0x1000, 1}, {"d8", p1, 0x1004, 2}})
	got := im.Sections()
	type row struct {
		begin, end, off uint64
		name            string
		id              SectionID
	}
	want := []row{{0x1000, 0x1004, 0, "a", 1}, {0x1004, 0x100c, 0, "d8", 2}, {0x100c, 0x1010, 0xc, "a", 1}}
	if len(got) != len(want) {
		t.Fatalf("Sections() = %+v, want %d rows", got, len(want))
	}
	for i, m := range got {
		r := row{m.Begin, m.End, m.SectionOffset, m.Section.Name(), m.ID}
		if r != want[i] || m.ASID != p1 {
			t.Errorf("row %d = %+v in %v, want %+v in %v", i, r, m.ASID, want[i], p1)
		}
	}
}

// TestAddErrorsChangeNothing checks that a failing Add leaves the image as it
// was.
func TestAddErrorsChangeNothing(t *testing.T) {
	im := New("tx")
	applyAdds(t, im, []add{{"a", p1, 0x1000, 1}})
	before := im.Sections()
	var rangeErr *RangeError
	if err := im.Add(testSection(t, "a"), p1, ^uint64(0)-4); !errors.As(err, &rangeErr) {
		t.Errorf("Add across the end of the address space: %v, want *RangeError", err)
	}
	if err := im.Add(testSection(t, "a"), AnyASID, ^uint64(0)-15); !errors.As(err, &rangeErr) {
		t.Errorf("Add ending at 2^64: %v, want *RangeError", err)
	}
	if err := im.Add(nil, p1, 0x1000); err == nil {
		t.Error("Add(nil) succeeded")
	}
	var idErr *UnknownIDError
	if err := im.AddCached(NewSectionCache(NoLimit), 7, p1); !errors.As(err, &idErr) || idErr.ID != 7 {
		t.Errorf("AddCached with an unknown ID: %v, want *UnknownIDError for 7", err)
	}
	after := im.Sections()
	if len(after) != len(before) || after[0] != before[0] {
		t.Errorf("failed Adds changed the image: %+v -> %+v", before, after)
	}
	if _, err := NewMemorySection("empty", nil); err == nil {
		t.Error("NewMemorySection with no bytes succeeded")
	}
}

// TestHighAddresses checks sections at the top of the address space: the last
// byte (2^64-1) can never be read, everything below it can.
func TestHighAddresses(t *testing.T) {
	im := New("high")
	top := ^uint64(0) - 16 // a 16-byte section ends at 2^64-1, exclusive
	applyAdds(t, im, []add{{"a", p1, top, 1}})
	checkReads(t, im, []read{
		{asid: p1, addr: top, size: 32, want: seq(0xa0, 16), id: 1},
		{asid: p1, addr: ^uint64(0), size: 1, err: ErrNoMap},
	})
	im.SetFallback(func(p []byte, _ ASID, addr uint64) (int, error) {
		if addr+uint64(len(p)) < addr {
			t.Errorf("fallback got a buffer wrapping past 2^64 at %#x (%d bytes)", addr, len(p))
		}
		return len(p), nil
	})
	n, _, err := im.Read(make([]byte, 8), p1, ^uint64(0)-4)
	if n != 4 || err != nil {
		t.Errorf("fallback read just below 2^64 = %d, %v; want 4, nil", n, err)
	}
}
