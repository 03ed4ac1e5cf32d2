package memimage

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeFile writes size bytes of a position-dependent pattern (so a wrong
// offset shows) and returns the path and the bytes.
func writeFile(t testing.TB, dir, name string, size int, salt byte) (string, []byte) {
	t.Helper()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7+i>>8) ^ salt
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// TestFileSection reads a real file through an image at unaligned offsets and
// checks every byte against the file.
func TestFileSection(t *testing.T) {
	dir := t.TempDir()
	page := os.Getpagesize()
	path, data := writeFile(t, dir, "lib.so", 3*page+123, 0)
	const off, size = 100, 2*4096 + 50
	s, err := NewFileSection(path, off, size)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != path || s.Offset() != off || s.Size() != size {
		t.Errorf("section = %s @%d size %d", s.Name(), s.Offset(), s.Size())
	}
	im := New("file")
	const vaddr = 0x7f0000001000
	if err := im.Add(s, p1, vaddr); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, size+64)
	n, err := im.ReadFull(got, p1, vaddr)
	var re *ReadError
	if n != size || !errors.As(err, &re) || re.Addr != vaddr+size || !errors.Is(err, ErrNoMap) {
		t.Fatalf("ReadFull past the section = %d, %v; want %d and a ReadError at %#x", n, err, size, vaddr+size)
	}
	if !bytes.Equal(got[:n], data[off:off+size]) {
		t.Error("bytes read through the image differ from the file")
	}
	for _, at := range []uint64{0, 1, 4095 - off, 4096 - off, size - 1} {
		var b [16]byte
		n, _, err := im.Read(b[:], p1, vaddr+at)
		want := data[off+at : off+min(at+16, size)]
		if err != nil || !bytes.Equal(b[:n], want) {
			t.Errorf("Read at +%d = % x, %v; want % x", at, b[:n], err, want)
		}
	}

	// The size is cut to the file, as in libipt.
	s, err = NewFileSection(path, uint64(len(data))-10, 1<<40)
	if err != nil || s.Size() != 10 {
		t.Errorf("section cut to the file: size %v, %v; want 10", s, err)
	}
	var se *SectionError
	for _, bad := range []struct {
		path      string
		off, size uint64
	}{{path, uint64(len(data)), 1}, {path, 1 << 50, 1}, {path, 0, 0}, {filepath.Join(dir, "missing"), 0, 1}} {
		if _, err := NewFileSection(bad.path, bad.off, bad.size); !errors.As(err, &se) {
			t.Errorf("NewFileSection(%s, %d, %d) = %v, want *SectionError", bad.path, bad.off, bad.size, err)
		}
	}
	if _, err := NewFileSection(filepath.Join(dir, "missing"), 0, 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v does not wrap fs.ErrNotExist", err)
	}
}

// TestStaleFile changes a file between making a section and reading it, in
// each way the section must notice.
func TestStaleFile(t *testing.T) {
	then := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	tests := []struct {
		name   string
		change func(t *testing.T, path string)
		reason string
	}{
		{"grown", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte{1})
			f.Close()
			os.Chtimes(path, then, then) // only the size tells
		}, "size"},
		{"rewritten in place", func(t *testing.T, path string) {
			os.Chtimes(path, then, then.Add(time.Nanosecond))
		}, "mtime"},
		{"replaced by rename", func(t *testing.T, path string) {
			other, _ := writeFile(t, filepath.Dir(path), "other", 5000, 0x5a)
			os.Chtimes(other, then, then) // same size and mtime: only the inode tells
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}, "identity"},
		{"removed", func(t *testing.T, path string) { os.Remove(path) }, "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, _ := writeFile(t, t.TempDir(), "f", 5000, 0)
			if err := os.Chtimes(path, then, then); err != nil {
				t.Fatal(err)
			}
			s, err := NewFileSection(path, 0, 5000)
			if err != nil {
				t.Fatal(err)
			}
			im := New(tt.name)
			im.Add(s, p1, 0x1000)
			tt.change(t, path)
			n, _, err := im.Read(make([]byte, 8), p1, 0x1000)
			var stale *StaleFileError
			if n != 0 || !errors.As(err, &stale) || stale.Reason != tt.reason || stale.Path != path {
				t.Fatalf("Read after the file was %s = %d, %v; want a StaleFileError for %q", tt.name, n, err, tt.reason)
			}
			if tt.reason == "missing" && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%v does not wrap fs.ErrNotExist", err)
			}
			t.Log(err)
		})
	}
}

// TestTruncatedWhileMapped truncates a file under a live mapping. Touching the
// lost pages raises SIGBUS; the read must report a stale file instead of
// crashing, and later reads keep reporting it.
func TestTruncatedWhileMapped(t *testing.T) {
	page := os.Getpagesize()
	for _, cached := range []bool{false, true} {
		name := map[bool]string{false: "uncached", true: "cached"}[cached]
		t.Run(name, func(t *testing.T) {
			path, data := writeFile(t, t.TempDir(), "f", 4*page, 0)
			im := New(name)
			var c *SectionCache
			if cached {
				c = NewSectionCache(NoLimit)
				id, err := c.AddFile(path, 0, uint64(4*page), 0x10000)
				if err != nil {
					t.Fatal(err)
				}
				im.AddCached(c, id, p1)
			} else {
				s, err := NewFileSection(path, 0, uint64(4*page))
				if err != nil {
					t.Fatal(err)
				}
				im.Add(s, p1, 0x10000)
			}
			b := make([]byte, 8)
			if n, _, err := im.Read(b, p1, 0x10000); n != 8 || err != nil || !bytes.Equal(b, data[:8]) {
				t.Fatalf("first read = %d, %v", n, err)
			}
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			far := uint64(0x10000 + 3*page)
			var stale *StaleFileError
			if n, _, err := im.Read(b, p1, far); n != 0 || !errors.As(err, &stale) || stale.Reason != "truncated while mapped" {
				t.Fatalf("read of a truncated page = %d, %v; want StaleFileError(truncated while mapped)", n, err)
			}
			if n, _, err := im.Read(b, p1, 0x10000); n != 0 || !errors.As(err, &stale) || stale.Reason != "size" {
				t.Fatalf("read after the fault = %d, %v; want StaleFileError(size)", n, err)
			}
			if c != nil && c.MappedBytes() != 0 {
				t.Errorf("cache still counts %d mapped bytes", c.MappedBytes())
			}
		})
	}
}

// TestSectionReadAt checks Section's io.ReaderAt.
func TestSectionReadAt(t *testing.T) {
	path, data := writeFile(t, t.TempDir(), "f", 100, 0)
	s, err := NewFileSection(path, 10, 50)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 20)
	if n, err := s.ReadAt(b, 40); n != 10 || err == nil || !bytes.Equal(b[:n], data[50:60]) {
		t.Errorf("ReadAt at the end = %d, %v", n, err)
	}
	if n, err := s.ReadAt(b, 5); n != 20 || err != nil || !bytes.Equal(b, data[15:35]) {
		t.Errorf("ReadAt = %d, %v", n, err)
	}
	if _, err := s.ReadAt(b, -1); err == nil {
		t.Error("ReadAt(-1) succeeded")
	}
}

// TestStaleFileFallback checks that a stale section is read through the
// fallback when the fallback can serve the address, and reports the stale
// file when it cannot.
func TestStaleFileFallback(t *testing.T) {
	path, _ := writeFile(t, t.TempDir(), "f", 100, 0)
	s, err := NewFileSection(path, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	im := New("stale")
	im.Add(s, p1, 0x1000)
	im.SetFallback(func(p []byte, _ ASID, addr uint64) (int, error) {
		if addr >= 0x1010 {
			return 0, &UnmappedError{Addr: addr}
		}
		for i := range p {
			p[i] = 0x42
		}
		return len(p), nil
	})
	b := make([]byte, 32)
	if n, id, err := im.Read(b, p1, 0x1008); n != 32 || id != 0 || err != nil || b[0] != 0x42 {
		t.Errorf("stale section with a working fallback: %d id %d %v % x", n, id, err, b[:n])
	}
	var stale *StaleFileError
	if n, _, err := im.Read(b, p1, 0x1010); n != 0 || !errors.As(err, &stale) {
		t.Errorf("stale section, fallback has nothing: %d, %v; want a StaleFileError", n, err)
	}
}

// TestEvictedRangeStaysReserved checks the property lock-free reads rely on:
// an unmapped section's range stays reserved and inaccessible, so a reader
// that raced with the unmapping faults recoverably instead of reading
// whatever else could have been mapped there, and mapping again reuses the
// same addresses.
func TestEvictedRangeStaysReserved(t *testing.T) {
	path, data := writeFile(t, t.TempDir(), "f", 3*os.Getpagesize(), 0)
	s, err := NewFileSection(path, 10, 5000)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64)
	if _, err := s.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	f := s.file
	view := f.view
	if !f.unmap() {
		t.Fatal("unmap found nothing mapped")
	}
	if _, ok := guardedCopy(b, view[100:]); ok {
		t.Fatal("copy from an unmapped section's range succeeded; the range is not inaccessible")
	}
	if n, err := s.ReadAt(b, 4000); n != 64 || err != nil || !bytes.Equal(b, data[4010:4074]) {
		t.Fatalf("read after unmapping = %d, %v", n, err)
	}
	if &f.view[0] != &view[0] {
		t.Error("the section was mapped again at a different address")
	}
}
