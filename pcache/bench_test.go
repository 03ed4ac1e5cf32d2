package pcache

import "testing"

// benchFile stores a file shaped like libc's inflated debug sections
// (10 MB in 8 sections) and returns its cache.
func benchFile(b *testing.B) *Cache {
	c := &Cache{Dir: b.TempDir() + "/pc"}
	secs := map[string][]byte{}
	for i, n := range []int{99 << 10, 5660 << 10, 960 << 10, 1278 << 10, 187 << 10, 44 << 10, 1406 << 10, 146 << 10} {
		secs[string(rune('a'+i))] = pattern(n, byte(i))
	}
	if err := c.Store("bench", testID, newClient("x", 1, secs)); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkLoad: map and validate a 10 MB file (warm page cache).
func BenchmarkLoad(b *testing.B) {
	c := benchFile(b)
	b.SetBytes(10 << 20)
	for b.Loop() {
		f, err := c.Load("bench", testID)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkStore: write (merge with the file on disk, rename) 10 MB.
func BenchmarkStore(b *testing.B) {
	c := benchFile(b)
	secs := map[string][]byte{"y": pattern(10<<20, 7)}
	b.SetBytes(10 << 20)
	for b.Loop() {
		if err := c.Store("bench2", testID, newClient("y", 1, secs)); err != nil {
			b.Fatal(err)
		}
	}
}
