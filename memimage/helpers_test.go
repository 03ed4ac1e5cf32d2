package memimage

import (
	"bytes"
	"errors"
	"testing"
)

// testSections are memory sections whose bytes say where they come from:
// section "a" holds a0 a1 … af, "d8" holds d0 … d7, and so on.
var testSections = map[string]struct {
	size int
	base byte
}{
	"a": {16, 0xa0}, "b": {16, 0xb0}, "c": {16, 0xc0}, "d8": {8, 0xd0}, "e2": {2, 0xe0},
}

func testSection(t testing.TB, name string) *Section {
	t.Helper()
	spec, ok := testSections[name]
	if !ok {
		t.Fatalf("no test section %q", name)
	}
	data := make([]byte, spec.size)
	for i := range data {
		data[i] = spec.base + byte(i)
	}
	s, err := NewMemorySection(name, data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var (
	p1  = ASID{Space: 1, Generation: 1}
	p2  = ASID{Space: 2, Generation: 1}
	p1g = ASID{Space: 1, Generation: Wildcard}
	g2  = ASID{Space: Wildcard, Generation: 2}
)

// add is one Add in a test: section name at addr in asid, with a cache-style
// ID so tests can check that split pieces keep it.
type add struct {
	name string
	asid ASID
	addr uint64
	id   SectionID
}

// read is one Read in a test and what it must return.
type read struct {
	asid ASID
	addr uint64
	size int
	want []byte    // nil: expect an error
	id   SectionID // expected ID when want != nil
	err  error     // errors.Is target when want == nil
}

func applyAdds(t *testing.T, im *Image, adds []add) {
	t.Helper()
	for _, a := range adds {
		if err := im.add(testSection(t, a.name), a.asid, a.addr, a.id); err != nil {
			t.Fatalf("add %s at %#x in %v: %v", a.name, a.addr, a.asid, err)
		}
	}
}

func checkReads(t *testing.T, im *Image, reads []read) {
	t.Helper()
	for _, r := range reads {
		buf := bytes.Repeat([]byte{0x5a}, r.size)
		n, id, err := im.Read(buf, r.asid, r.addr)
		if r.want == nil {
			if err == nil || !errors.Is(err, r.err) {
				t.Errorf("Read(%v, %#x, %d) = %d, %v; want error %v", r.asid, r.addr, r.size, n, err, r.err)
			}
			if n != 0 {
				t.Errorf("Read(%v, %#x) failed with n=%d, want 0", r.asid, r.addr, n)
			}
			continue
		}
		if err != nil || !bytes.Equal(buf[:n], r.want) || id != r.id {
			t.Errorf("Read(%v, %#x, %d) = % x id %d err %v; want % x id %d",
				r.asid, r.addr, r.size, buf[:n], id, err, r.want, r.id)
		}
		for _, b := range buf[n:] {
			if b != 0x5a {
				t.Errorf("Read(%v, %#x) wrote past the %d bytes it returned: % x", r.asid, r.addr, n, buf)
				break
			}
		}
	}
}

// seq returns count bytes counting up from first.
func seq(first byte, count int) []byte {
	b := make([]byte, count)
	for i := range b {
		b[i] = first + byte(i)
	}
	return b
}
