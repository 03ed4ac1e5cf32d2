package memimage

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// readerOrders are the orders TestReaderMatchesImage reads addresses in:
// each keeps one Reader across all its reads, so windows made for one read
// serve (or must not serve) the next.
var readerOrders = map[string]func(lo, hi uint64) []uint64{
	"ascending": func(lo, hi uint64) []uint64 {
		var out []uint64
		for a := lo; a < hi; a++ {
			out = append(out, a)
		}
		return out
	},
	"descending": func(lo, hi uint64) []uint64 {
		var out []uint64
		for a := hi; a > lo; a-- {
			out = append(out, a-1)
		}
		return out
	},
	"jumping": func(lo, hi uint64) []uint64 {
		var out []uint64
		for i := uint64(0); i < 3*(hi-lo); i++ {
			out = append(out, lo+(i*37)%(hi-lo))
		}
		return out
	},
}

// TestReaderMatchesImage checks that a Reader returns what Image.Read returns
// (bytes, count, ID, error) in images that exercise every rule: splits,
// address spaces that match each other partly, overlay bytes, the fallback.
func TestReaderMatchesImage(t *testing.T) {
	tests := []struct {
		name  string
		adds  []add
		orig  map[uint64][]byte
		fb    bool
		asids []ASID
	}{
		{"one section", []add{{"a", p1, 0x1000, 1}}, nil, false, []ASID{p1, p2, AnyASID}},
		{"split", []add{{"a", p1, 0x1000, 1}, {"d8", p1, 0x1004, 2}}, nil, false, []ASID{p1}},
		{"adjacent", []add{{"a", p1, 0x1000, 1}, {"b", p1, 0x1010, 2}, {"c", p1, 0x1020, 3}}, nil, false, []ASID{p1}},
		{"overlay in the middle", []add{{"a", p1, 0x1000, 1}, {"b", p1, 0x1010, 2}},
			map[uint64][]byte{0x1005: {0x99}, 0x100f: {0x98, 0x97}}, false, []ASID{p1, AnyASID}},
		{"overlay only", nil, map[uint64][]byte{0x1003: {1, 2, 3}}, false, []ASID{p1}},
		{"wildcard spaces", []add{{"a", p1g, 0x1000, 1}, {"b", g2, 0x1008, 2}, {"d8", p1, 0x100c, 3}},
			nil, false, []ASID{p1, {Space: 1, Generation: 2}, AnyASID, g2}},
		{"fallback between", []add{{"d8", p1, 0x1004, 1}, {"e2", p1, 0x1010, 2}},
			map[uint64][]byte{0x1001: {0x55}}, true, []ASID{p1}},
	}
	sizes := []int{1, 3, 8, 16, 40}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			im := New(tt.name)
			applyAdds(t, im, tt.adds)
			for a, b := range tt.orig {
				if err := im.SetOriginal(p1, a, b); err != nil {
					t.Fatal(err)
				}
			}
			if tt.fb {
				im.SetFallback(modelFallbackAt(0x1000))
			}
			for _, q := range tt.asids {
				for order, addrs := range readerOrders {
					for _, size := range sizes {
						r := im.NewReader(q)
						for _, addr := range addrs(0xff8, 0x1030) {
							compareRead(t, im, r, q, addr, size)
						}
						if t.Failed() {
							t.Fatalf("%v, %s order, size %d", q, order, size)
						}
					}
				}
			}
		})
	}
}

// modelFallbackAt is modelFallback moved to base.
func modelFallbackAt(base uint64) ReadFunc {
	return func(p []byte, q ASID, addr uint64) (int, error) {
		if addr < base {
			return 0, &UnmappedError{ASID: q, Addr: addr}
		}
		return modelFallback(p, q, addr-base)
	}
}

// compareRead reads size bytes at addr through the image and the reader and
// reports any difference.
func compareRead(t *testing.T, im *Image, r *Reader, q ASID, addr uint64, size int) {
	t.Helper()
	want := bytes.Repeat([]byte{0x5a}, size)
	wn, wid, werr := im.Read(want, q, addr)
	got := bytes.Repeat([]byte{0x5a}, size)
	n, id, err := r.Read(got, addr)
	if n != wn || id != wid || !bytes.Equal(got, want) || (err == nil) != (werr == nil) ||
		(werr != nil && err.Error() != werr.Error()) {
		t.Errorf("at %#x size %d: Reader.Read = % x id %d %v; Image.Read = % x id %d %v",
			addr, size, got, id, err, want, wid, werr)
	}
	full := make([]byte, size)
	wantFull := make([]byte, size)
	fn, ferr := r.ReadFull(full, addr)
	wfn, wferr := im.ReadFull(wantFull, q, addr)
	if fn != wfn || !bytes.Equal(full[:fn], wantFull[:wfn]) || (ferr == nil) != (wferr == nil) ||
		(wferr != nil && ferr.Error() != wferr.Error()) {
		t.Errorf("at %#x size %d: Reader.ReadFull = %d %v; Image.ReadFull = %d %v", addr, size, fn, ferr, wfn, wferr)
	}
}

// chunkFile writes a file of three and a half chunks and returns a cached
// image of it at 0x10000000 and the file's bytes.
func chunkFile(t *testing.T, limit uint64) (*Image, *SectionCache, string, []byte) {
	t.Helper()
	size := 3*chunkSize + chunkSize/2
	path, data := writeFile(t, t.TempDir(), "lib.so", size, 0x3c)
	c := NewSectionCache(limit)
	id, err := c.AddFile(path, 0, uint64(size), 0x10000000)
	if err != nil {
		t.Fatal(err)
	}
	im := New("chunks")
	if err := im.AddCached(c, id, p1); err != nil {
		t.Fatal(err)
	}
	return im, c, path, data
}

// TestReaderFileSection reads a file section through a Reader at sizes and
// offsets that cross chunk and page boundaries, and checks every byte
// against the file, the ID, and that resident chunks count against the
// cache.
func TestReaderFileSection(t *testing.T) {
	im, c, _, data := chunkFile(t, NoLimit)
	r := im.NewReader(p1)
	page := os.Getpagesize()
	var offs []int
	for _, edge := range []int{0, page, chunkSize, 2 * chunkSize, 3 * chunkSize} {
		for _, d := range []int{-9, -8, -1, 0, 1, 7} {
			if o := edge + d; o >= 0 && o < len(data) {
				offs = append(offs, o)
			}
		}
	}
	offs = append(offs, len(data)-1, len(data)-16)
	for _, size := range []int{1, 7, 8, 9, 16, 17, 32, 33, 63, 64, 65, 256, 4096} {
		for _, off := range offs {
			buf := make([]byte, size)
			n, id, err := r.Read(buf, 0x10000000+uint64(off))
			want := data[off:min(off+size, len(data))]
			if err != nil || id != 1 || !bytes.Equal(buf[:n], want) {
				t.Fatalf("Read(%d bytes at +%#x) = %d id %d %v; want %d bytes of the file", size, off, n, id, err, len(want))
			}
			if n, err := r.ReadFull(buf, 0x10000000+uint64(off)); off+size <= len(data) && (n != size || err != nil || !bytes.Equal(buf, want)) {
				t.Fatalf("ReadFull(%d bytes at +%#x) = %d %v", size, off, n, err)
			}
		}
	}
	// Every chunk was touched: the cache counts the mapping and the copies.
	if got, want := c.MappedBytes(), uint64(2*len(data)); got != want {
		t.Errorf("MappedBytes = %d, want %d (mapping and resident chunks)", got, want)
	}
	// Reads of a window come from the window.
	r.Read(make([]byte, 8), 0x10000000+chunkSize+100)
	if uint64(len(r.data)) != chunkSize || r.lo != 0x10000000+chunkSize {
		t.Errorf("window = [%#x, +%#x), want the second chunk", r.lo, len(r.data))
	}
	// Past the section: the image's error.
	if n, _, err := r.Read(make([]byte, 8), 0x10000000+uint64(len(data))); n != 0 || !errors.Is(err, ErrNoMap) {
		t.Errorf("read past the section = %d, %v", n, err)
	}
}

// TestReaderTruncated truncates a file under Readers that hold windows of
// it, cached and not. A Reader must never crash and never return bytes the
// file did not hold: it returns the bytes of its window as the file held
// them, notices the truncation when it moves to a window whose pages are
// gone, and from then on, like every other Reader of the section, reports a
// *StaleFileError.
func TestReaderTruncated(t *testing.T) {
	for _, cached := range []bool{false, true} {
		name := map[bool]string{false: "uncached", true: "cached"}[cached]
		t.Run(name, func(t *testing.T) {
			size := 3*chunkSize + chunkSize/2
			path, data := writeFile(t, t.TempDir(), "f", size, 0x11)
			im := New(name)
			var c *SectionCache
			if cached {
				c = NewSectionCache(NoLimit)
				id, err := c.AddFile(path, 0, uint64(size), 0x10000000)
				if err != nil {
					t.Fatal(err)
				}
				im.AddCached(c, id, p1)
			} else {
				s, err := NewFileSection(path, 0, uint64(size))
				if err != nil {
					t.Fatal(err)
				}
				im.Add(s, p1, 0x10000000)
			}
			const base = 0x10000000
			r, other := im.NewReader(p1), im.NewReader(p1)
			b := make([]byte, 16)
			// Both readers make chunks 0 and 2 resident; r ends in chunk 0.
			for _, rd := range []*Reader{other, r} {
				for _, off := range []int{2*chunkSize + 64, 64} {
					if n, _, err := rd.Read(b, base+uint64(off)); n != 16 || err != nil || !bytes.Equal(b, data[off:off+16]) {
						t.Fatalf("read at +%#x before truncation = %d, %v", off, n, err)
					}
				}
			}
			if err := os.Truncate(path, chunkSize); err != nil {
				t.Fatal(err)
			}
			// Still in its window: the bytes the file held.
			if n, _, err := r.Read(b, base+80); n != 16 || err != nil || !bytes.Equal(b, data[80:96]) {
				t.Fatalf("read in the current window after truncation = %d, %v, % x; want the old bytes", n, err, b[:n])
			}
			// Moving to chunk 2 (resident, its pages gone): noticed.
			var stale *StaleFileError
			// (The reason is "size": the Reader's check dropped the mapping
			// and the read that reports it found the file's new size.)
			if n, _, err := r.Read(b, base+2*chunkSize+64); n != 0 || !errors.As(err, &stale) {
				t.Fatalf("read of a resident chunk whose pages are gone = %d, %v; want a StaleFileError", n, err)
			}
			// Every reader of the section now reports it, in any window,
			// including the other reader's current one.
			for _, rd := range []*Reader{r, other} {
				if n, _, err := rd.Read(b, base+64); n != 0 || !errors.As(err, &stale) || stale.Reason != "size" {
					t.Fatalf("read after the truncation was noticed = %d, %v; want StaleFileError(size)", n, err)
				}
			}
			if n, _, err := im.Read(b, p1, base+64); n != 0 || !errors.As(err, &stale) {
				t.Fatalf("Image.Read after the truncation was noticed = %d, %v", n, err)
			}
			if c != nil && c.MappedBytes() != 0 {
				t.Errorf("cache still counts %d bytes", c.MappedBytes())
			}
		})
	}
}

// TestReaderTruncatedBeforeWindow truncates the file before a Reader moves
// into a chunk another Reader made resident, without anything faulting in
// between: the probe of the new window's pages must notice.
func TestReaderTruncatedBeforeWindow(t *testing.T) {
	im, _, path, data := chunkFile(t, NoLimit)
	first, second := im.NewReader(p1), im.NewReader(p1)
	b := make([]byte, 8)
	if n, _, err := first.Read(b, 0x10000000+3*chunkSize+5); n != 8 || err != nil || !bytes.Equal(b, data[3*chunkSize+5:][:8]) {
		t.Fatalf("first read = %d, %v", n, err)
	}
	if err := os.Truncate(path, 100); err != nil {
		t.Fatal(err)
	}
	var stale *StaleFileError
	if n, _, err := second.Read(b, 0x10000000+3*chunkSize+5); n != 0 || !errors.As(err, &stale) {
		t.Fatalf("read of a resident chunk after truncation = %d, %v; want a StaleFileError", n, err)
	}
}

// TestReaderSeesImageChanges keeps one Reader across changes to the image:
// every change must show in its next read, even inside its window.
func TestReaderSeesImageChanges(t *testing.T) {
	im, _, _, data := chunkFile(t, NoLimit)
	r := im.NewReader(p1)
	const at = 0x10000000 + 0x100
	b := make([]byte, 8)
	read := func(step string, want []byte, wantErr error) {
		t.Helper()
		n, _, err := r.Read(b, at)
		if wantErr != nil {
			if n != 0 || !errors.Is(err, wantErr) {
				t.Fatalf("%s: Read = %d, %v; want %v", step, n, err, wantErr)
			}
			return
		}
		if n != len(want) || err != nil || !bytes.Equal(b[:n], want) {
			t.Fatalf("%s: Read = % x, %v; want % x", step, b[:n], err, want)
		}
	}
	read("start", data[0x100:0x108], nil)
	im.SetOriginal(p1, at+2, []byte{0xcc})
	read("breakpoint shadow", append(append(append([]byte{}, data[0x100:0x102]...), 0xcc), data[0x103:0x108]...), nil)
	im.ClearOriginal(p1, at+2, 1)
	read("shadow cleared", data[0x100:0x108], nil)
	s, _ := NewMemorySection("patch", []byte{1, 2, 3, 4})
	im.Add(s, p1, at+4)
	read("newer section: a read stops where it starts", data[0x100:0x104], nil)
	im.RemoveASID(p1)
	read("removed", nil, ErrNoMap)
}

// TestReaderEviction reads two files through Readers with a cache that has
// room for one file's mapping and a chunk: the Readers keep returning the
// files' bytes while evictions drop what the other Reader's window came
// from, and the cache stays within its limit.
func TestReaderEviction(t *testing.T) {
	page := os.Getpagesize()
	size := chunkSize + 3*page
	dir := t.TempDir()
	limit := uint64(size + chunkSize + page)
	c := NewSectionCache(limit)
	im := New("evict")
	var files [][]byte
	for i := range 2 {
		path, data := writeFile(t, dir, string(rune('a'+i)), size, byte(i))
		id, err := c.AddFile(path, 0, uint64(size), uint64(i+1)*0x10000000)
		if err != nil {
			t.Fatal(err)
		}
		im.AddCached(c, id, p1)
		files = append(files, data)
	}
	readers := []*Reader{im.NewReader(p1), im.NewReader(p1)}
	b := make([]byte, 24)
	for i := range 200 {
		f := i % 2
		off := (i * 4099) % (size - len(b))
		n, _, err := readers[(i/3)%2].Read(b, uint64(f+1)*0x10000000+uint64(off))
		if n != len(b) || err != nil || !bytes.Equal(b, files[f][off:off+len(b)]) {
			t.Fatalf("read %d (file %d at +%#x) = %d, %v", i, f, off, n, err)
		}
		if got := c.MappedBytes(); got > limit {
			t.Fatalf("read %d: MappedBytes %d over the limit %d", i, got, limit)
		}
	}
	// A limit with no room for a chunk: Readers read like Image.Read.
	c.SetLimit(uint64(size))
	for i := range 20 {
		off := (i * 4099) % (size - len(b))
		if n, _, err := readers[0].Read(b, 0x10000000+uint64(off)); n != len(b) || err != nil || !bytes.Equal(b, files[0][off:off+len(b)]) {
			t.Fatalf("small limit, read at +%#x = %d, %v", off, n, err)
		}
	}
	if got := c.MappedBytes(); got > uint64(size) {
		t.Errorf("small limit: MappedBytes %d", got)
	}
	// A limit below one section: mapped for each read only, nothing kept.
	c.SetLimit(uint64(size / 2))
	for i := range 20 {
		f := i % 2
		off := (i * 4099) % (size - len(b))
		if n, _, err := readers[i/2%2].Read(b, uint64(f+1)*0x10000000+uint64(off)); n != len(b) || err != nil || !bytes.Equal(b, files[f][off:off+len(b)]) {
			t.Fatalf("limit below the section, read at +%#x = %d, %v", off, n, err)
		}
	}
	if got := c.MappedBytes(); got != 0 {
		t.Errorf("limit below the section: MappedBytes %d, want 0", got)
	}
}

// TestReaderStaleFallback checks that a Reader, like Image.Read, reads a
// stale file section's addresses through the fallback.
func TestReaderStaleFallback(t *testing.T) {
	path, _ := writeFile(t, t.TempDir(), "f", 100, 0)
	s, err := NewFileSection(path, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	im := New("stale")
	im.Add(s, p1, 0x1000)
	im.SetFallback(func(p []byte, _ ASID, addr uint64) (int, error) {
		for i := range p {
			p[i] = 0x42
		}
		return len(p), nil
	})
	r := im.NewReader(p1)
	b := make([]byte, 8)
	if n, id, err := r.Read(b, 0x1010); n != 8 || id != 0 || err != nil || b[0] != 0x42 {
		t.Errorf("stale section with a fallback: %d id %d %v % x", n, id, err, b[:n])
	}
}

// TestReaderTruncatedConcurrently truncates a file while goroutines read it
// through Readers and through the image. Nothing may crash, every read must
// return the file's original bytes or a *StaleFileError, and once the
// truncation has been noticed, reads of the lost pages must fail.
func TestReaderTruncatedConcurrently(t *testing.T) {
	size := 3 * chunkSize
	path, data := writeFile(t, t.TempDir(), "f", size, 0x77)
	c := NewSectionCache(NoLimit)
	id, err := c.AddFile(path, 0, uint64(size), 0x10000000)
	if err != nil {
		t.Fatal(err)
	}
	im := New("truncate")
	im.AddCached(c, id, p1)
	const readers, rounds = 3, 3000
	errs := make(chan error, readers)
	done := make(chan struct{})
	for g := range readers {
		go func() {
			defer func() { done <- struct{}{} }()
			r := im.NewReader(p1)
			b := make([]byte, 16)
			for i := range rounds {
				off := (i*4099 + g*977) % (size - len(b))
				var n int
				var err error
				if i%3 == g%3 {
					n, _, err = im.Read(b, p1, 0x10000000+uint64(off))
				} else {
					n, _, err = r.Read(b, 0x10000000+uint64(off))
				}
				var stale *StaleFileError
				switch {
				case err != nil && !errors.As(err, &stale):
					errs <- err
					return
				case err == nil && !bytes.Equal(b[:n], data[off:off+n]):
					errs <- errors.New("wrong bytes")
					return
				}
			}
		}()
	}
	// Cut at a page boundary: the bytes before the cut stay right (a cut
	// inside a page zeroes its tail in the page cache, which no mapping can
	// tell from the file's bytes).
	if err := os.Truncate(path, int64(chunkSize)); err != nil {
		t.Fatal(err)
	}
	for range readers {
		<-done
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	b := make([]byte, 16)
	var stale *StaleFileError
	if n, _, err := im.NewReader(p1).Read(b, 0x10000000+uint64(2*chunkSize)); n != 0 || !errors.As(err, &stale) {
		t.Errorf("read of a lost page after the readers = %d, %v; want a StaleFileError", n, err)
	}
}
