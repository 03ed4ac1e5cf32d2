package memimage

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"
)

// TestCacheIDs checks that the cache hands out stable IDs, shares sections
// between load addresses and images, and gives a changed file a new ID.
func TestCacheIDs(t *testing.T) {
	dir := t.TempDir()
	pa, da := writeFile(t, dir, "a.so", 8192, 1)
	pb, _ := writeFile(t, dir, "b.so", 8192, 2)
	c := NewSectionCache(NoLimit)
	id := func(path string, off, size, vaddr uint64) SectionID {
		t.Helper()
		id, err := c.AddFile(path, off, size, vaddr)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a1 := id(pa, 0, 4096, 0x1000)
	if a1 != 1 {
		t.Errorf("first ID = %d, want 1", a1)
	}
	if again := id(pa, 0, 4096, 0x1000); again != a1 {
		t.Errorf("same file, range and address: ID %d, want %d", again, a1)
	}
	a2 := id(pa, 0, 4096, 0x9000)
	b1 := id(pb, 0, 4096, 0x1000)
	a3 := id(pa, 4096, 4096, 0x2000)
	if len(map[SectionID]bool{a1: true, a2: true, b1: true, a3: true}) != 4 {
		t.Errorf("IDs %d %d %d %d are not distinct", a1, a2, b1, a3)
	}
	s1, v1, _ := c.Section(a1)
	s2, v2, _ := c.Section(a2)
	if s1 != s2 || v1 != 0x1000 || v2 != 0x9000 {
		t.Errorf("one file range at two addresses should share its section: %p@%#x %p@%#x", s1, v1, s2, v2)
	}
	var ide *UnknownIDError
	if _, _, err := c.Section(0); !errors.As(err, &ide) {
		t.Errorf("Section(0) = %v", err)
	}
	if _, _, err := c.Section(99); !errors.As(err, &ide) {
		t.Errorf("Section(99) = %v", err)
	}
	if _, err := c.AddFile(pa, 1<<20, 1, 0); err == nil {
		t.Error("AddFile beyond the file's end succeeded")
	}

	// Two images share the mapping.
	im1, im2 := New("p1"), New("p2")
	im1.AddCached(c, a1, p1)
	im2.AddCached(c, a1, p2)
	b := make([]byte, 4)
	if n, gotID, err := im1.Read(b, p1, 0x1004); n != 4 || gotID != a1 || err != nil || !bytes.Equal(b, da[4:8]) {
		t.Errorf("im1 read = %d id %d %v", n, gotID, err)
	}
	im2.Read(b, p2, 0x1004)
	if got := c.MappedBytes(); got != 4096 {
		t.Errorf("MappedBytes = %d after two images read one section, want 4096", got)
	}

	// A changed file gets a new section and ID; the old ID reports it stale.
	later := time.Now().Add(time.Hour)
	os.Chtimes(pb, later, later)
	b2 := id(pb, 0, 4096, 0x1000)
	if b2 == b1 {
		t.Errorf("changed file kept its ID %d", b1)
	}
	old := New("old")
	old.AddCached(c, b1, p1)
	var stale *StaleFileError
	if _, _, err := old.Read(b, p1, 0x1000); !errors.As(err, &stale) {
		t.Errorf("read through the old ID = %v, want StaleFileError", err)
	}
	fresh := New("fresh")
	fresh.AddCached(c, b2, p1)
	if n, gotID, err := fresh.Read(b, p1, 0x1000); n != 4 || gotID != b2 || err != nil {
		t.Errorf("read through the new ID = %d id %d %v", n, gotID, err)
	}
}

// TestCacheLRU checks the byte limit: least recently read sections are
// unmapped first, sections larger than the limit never stay mapped, and
// lowering the limit evicts at once.
func TestCacheLRU(t *testing.T) {
	page := uint64(os.Getpagesize())
	dir := t.TempDir()
	c := NewSectionCache(2 * page)
	im := New("lru")
	files := map[string]SectionID{}
	for i, name := range []string{"A", "B", "C"} {
		path, _ := writeFile(t, dir, name, int(page), byte(i))
		id, err := c.AddFile(path, 0, page, uint64(i+1)*0x100000)
		if err != nil {
			t.Fatal(err)
		}
		im.AddCached(c, id, AnyASID)
		files[name] = id
	}
	bigPath, bigData := writeFile(t, dir, "big", int(3*page), 9)
	big, _ := c.AddFile(bigPath, 0, 3*page, 0x900000)
	im.AddCached(c, big, AnyASID)

	touch := func(name string) {
		t.Helper()
		s, vaddr, _ := c.Section(files[name])
		b := make([]byte, 1)
		if n, _, err := im.Read(b, p1, vaddr+5); n != 1 || err != nil {
			t.Fatalf("read %s: %d %v", name, n, err)
		}
		_ = s
	}
	mapped := func() string {
		var out []byte
		for _, name := range []string{"A", "B", "C"} {
			s, _, _ := c.Section(files[name])
			if s.file.mapped.Load() {
				out = append(out, name...)
			}
		}
		return string(out)
	}
	steps := []struct {
		touch, want string
	}{
		{"A", "A"}, {"B", "AB"}, {"C", "BC"}, // A was least recently used
		{"B", "BC"}, {"A", "AB"}, // C was
		{"A", "AB"}, {"C", "AC"}, // B was
	}
	for i, st := range steps {
		touch(st.touch)
		if got := mapped(); got != st.want {
			t.Fatalf("step %d (read %s): mapped %q, want %q", i, st.touch, got, st.want)
		}
		if got := c.MappedBytes(); got != uint64(len(st.want))*page {
			t.Fatalf("step %d: MappedBytes = %d, want %d", i, got, uint64(len(st.want))*page)
		}
	}

	// Larger than the limit: read correctly, never kept.
	b := make([]byte, 64)
	n, _, err := im.Read(b, p1, 0x900000+2*page)
	if n != 64 || err != nil || !bytes.Equal(b, bigData[2*page:2*page+64]) {
		t.Errorf("read of an over-limit section = %d, %v", n, err)
	}
	if s, _, _ := c.Section(big); s.file.mapped.Load() || mapped() != "AC" {
		t.Errorf("over-limit read changed what is mapped: big %v, others %q", s.file.mapped.Load(), mapped())
	}

	c.SetLimit(page)
	if got := mapped(); got != "C" {
		t.Errorf("after SetLimit(1 page): mapped %q, want C", got)
	}
	c.SetLimit(0)
	if got := mapped(); got != "" || c.MappedBytes() != 0 {
		t.Errorf("after SetLimit(0): mapped %q, %d bytes", got, c.MappedBytes())
	}
	touch("B") // limit 0: read, then nothing stays mapped
	if got := mapped(); got != "" {
		t.Errorf("limit 0 kept %q mapped", got)
	}
}
