package memimage

import (
	"errors"
	"testing"
)

// patternFallback serves every address with its low byte plus 0x11, and
// records the reads it was asked for.
type patternFallback struct{ calls []fallbackCall }

type fallbackCall struct {
	asid ASID
	addr uint64
	size int
}

func (f *patternFallback) read(p []byte, asid ASID, addr uint64) (int, error) {
	f.calls = append(f.calls, fallbackCall{asid, addr, len(p)})
	for i := range p {
		p[i] = byte(addr+uint64(i)) + 0x11
	}
	return len(p), nil
}

func pattern(addr uint64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(addr+uint64(i)) + 0x11
	}
	return b
}

// TestFallback checks that the fallback serves exactly the addresses no
// section covers, is told the reader's ASID, and is never asked to read
// across the start of a section.
func TestFallback(t *testing.T) {
	im := New("fallback")
	applyAdds(t, im, []add{{"a", p1, 0x1000, 1}, {"b", p2, 0x2000, 2}})
	fb := &patternFallback{}
	im.SetFallback(fb.read)
	checkReads(t, im, []read{
		{asid: p1, addr: 0xff8, size: 16, want: pattern(0xff8, 8)},       // up to a
		{asid: p1, addr: 0x1008, size: 16, want: seq(0xa8, 8), id: 1},    // a itself
		{asid: p1, addr: 0x1010, size: 16, want: pattern(0x1010, 16)},    // past a's end
		{asid: p1, addr: 0x2000, size: 4, want: pattern(0x2000, 4)},      // b is not in p1
		{asid: AnyASID, addr: 0x1ffe, size: 4, want: pattern(0x1ffe, 2)}, // b is in AnyASID
	})
	want := []fallbackCall{{p1, 0xff8, 8}, {p1, 0x1010, 16}, {p1, 0x2000, 4}, {AnyASID, 0x1ffe, 2}}
	if len(fb.calls) != len(want) {
		t.Fatalf("fallback calls = %+v, want %+v", fb.calls, want)
	}
	for i := range want {
		if fb.calls[i] != want[i] {
			t.Errorf("fallback call %d = %+v, want %+v", i, fb.calls[i], want[i])
		}
	}
	im.SetFallback(nil)
	checkReads(t, im, []read{{asid: p1, addr: 0xff8, size: 16, err: ErrNoMap}})
}

// TestFallbackResults checks how Read treats what the fallback returns.
func TestFallbackResults(t *testing.T) {
	errIO := errors.New("input/output error")
	tests := []struct {
		name    string
		n       int
		err     error
		wantN   int
		wantErr error // errors.Is target; nil for success
		typed   bool  // want a *FallbackError
	}{
		{"full", 8, nil, 8, nil, false},
		{"short", 3, nil, 3, nil, false},
		{"short with error keeps the bytes", 3, errIO, 3, nil, false},
		{"error", 0, errIO, 0, errIO, true},
		{"nothing there", 0, &UnmappedError{Addr: 0x10}, 0, ErrNoMap, true},
		{"zero bytes without error means unmapped", 0, nil, 0, ErrNoMap, false},
		{"more bytes than the buffer", 9, nil, 0, nil, true},
		{"negative count", -1, nil, 0, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			im := New(tt.name)
			im.SetFallback(func(p []byte, _ ASID, _ uint64) (int, error) {
				for i := range p {
					p[i] = 0x77
				}
				return tt.n, tt.err
			})
			n, _, err := im.Read(make([]byte, 8), p1, 0x10)
			if n != tt.wantN {
				t.Errorf("n = %d, want %d", n, tt.wantN)
			}
			var fe *FallbackError
			switch {
			case tt.typed && !errors.As(err, &fe):
				t.Errorf("err = %v, want *FallbackError", err)
			case tt.typed && (fe.Addr != 0x10 || fe.ASID != p1):
				t.Errorf("FallbackError names %#x in %v, want 0x10 in %v", fe.Addr, fe.ASID, p1)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			case !tt.typed && tt.wantErr == nil && err != nil:
				t.Errorf("err = %v, want nil", err)
			}
		})
	}
}

// TestOverlay checks that original bytes hide sonde's patches in everything a
// read can return, that they apply only in matching address spaces, and that
// clearing them shows the underlying bytes again.
func TestOverlay(t *testing.T) {
	im := New("overlay")
	applyAdds(t, im, []add{{"a", p1, 0x1000, 1}})
	// The "live process" holds patched bytes: 0xcc everywhere.
	im.SetFallback(func(p []byte, _ ASID, _ uint64) (int, error) {
		for i := range p {
			p[i] = 0xcc
		}
		return len(p), nil
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(im.SetOriginal(p1, 0x2001, []byte{0x55}))             // a breakpoint in the fallback
	must(im.SetOriginal(p1, 0x1004, []byte{0x11, 0x22}))       // over a section (sections may be patched too)
	must(im.SetOriginal(p2, 0x2002, []byte{0x66}))             // another process
	must(im.SetOriginal(p1, 0x3000, []byte{1, 2, 3, 4, 5, 6})) // a probe jump
	must(im.SetOriginal(p1, 0x3002, []byte{9}))                // newer wins
	checkReads(t, im, []read{
		{asid: p1, addr: 0x2000, size: 4, want: []byte{0xcc, 0x55, 0xcc, 0xcc}},
		{asid: p2, addr: 0x2000, size: 4, want: []byte{0xcc, 0xcc, 0x66, 0xcc}},
		{asid: AnyASID, addr: 0x2000, size: 4, want: []byte{0xcc, 0x55, 0x66, 0xcc}},
		{asid: p1, addr: 0x1002, size: 4, want: []byte{0xa2, 0xa3, 0x11, 0x22}, id: 1},
		{asid: p1, addr: 0x2ffe, size: 10, want: []byte{0xcc, 0xcc, 1, 2, 9, 4, 5, 6, 0xcc, 0xcc}},
	})
	must(im.ClearOriginal(p1, 0x2001, 1))
	must(im.ClearOriginal(p1, 0x3003, 2)) // splits the probe's bytes
	checkReads(t, im, []read{
		{asid: p1, addr: 0x2000, size: 4, want: []byte{0xcc, 0xcc, 0xcc, 0xcc}},
		{asid: p2, addr: 0x2000, size: 4, want: []byte{0xcc, 0xcc, 0x66, 0xcc}},
		{asid: p1, addr: 0x3000, size: 8, want: []byte{1, 2, 9, 0xcc, 0xcc, 6, 0xcc, 0xcc}},
	})

	// Without a fallback, the overlay alone serves what it knows, up to its
	// end (overlay pieces are boundaries too) and never across a section start.
	im.SetFallback(nil)
	must(im.SetOriginal(p1, 0xffe, []byte{0x31, 0x32, 0x33}))
	checkReads(t, im, []read{
		{asid: p1, addr: 0x3000, size: 8, want: []byte{1, 2}},
		{asid: p1, addr: 0x3002, size: 8, want: []byte{9}},
		{asid: p1, addr: 0x3003, size: 8, err: ErrNoMap},
		{asid: p1, addr: 0xffe, size: 8, want: []byte{0x31, 0x32}},
		{asid: p1, addr: 0x1000, size: 2, want: []byte{0x33, 0xa1}, id: 1},
	})

	var rangeErr *RangeError
	if err := im.SetOriginal(p1, 0x10, nil); !errors.As(err, &rangeErr) {
		t.Errorf("SetOriginal with no bytes: %v, want *RangeError", err)
	}
	if err := im.ClearOriginal(p1, ^uint64(0), 2); !errors.As(err, &rangeErr) {
		t.Errorf("ClearOriginal wrapping: %v, want *RangeError", err)
	}
}

// TestOverlayCopiesBytes checks that SetOriginal keeps its own copy.
func TestOverlayCopiesBytes(t *testing.T) {
	im := New("copy")
	orig := []byte{0x90}
	if err := im.SetOriginal(p1, 0x10, orig); err != nil {
		t.Fatal(err)
	}
	orig[0] = 0xcc
	checkReads(t, im, []read{{asid: p1, addr: 0x10, size: 1, want: []byte{0x90}}})
}
