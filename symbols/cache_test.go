package symbols

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestCacheSharesAndNoticesRebuilds(t *testing.T) {
	src := build(t, "dw_inline.c", "-O2")
	other := build(t, "dw_inline.c", "-O0")
	dir := t.TempDir()
	p := filepath.Join(dir, "prog")
	copyFile(t, src, p)
	c := NewCache(nil)
	defer c.Close()

	var wg sync.WaitGroup
	got := make([]*Binary, 8)
	for i := range got {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			b, err := c.Open(p)
			if err != nil {
				t.Error(err)
			}
			got[i] = b
		}(i)
	}
	wg.Wait()
	for _, b := range got {
		if b != got[0] || b == nil {
			t.Fatal("concurrent opens of one file gave different binaries")
		}
	}
	// Via a second path (hard link): the same file, the same Binary.
	link := filepath.Join(dir, "link")
	if err := os.Link(p, link); err == nil {
		if b, _ := c.Open(link); b != got[0] {
			t.Error("a hard link to the same file was opened again")
		}
	}
	// A rebuilt file (new inode) at the same path is opened afresh.
	tmp := filepath.Join(dir, "new")
	copyFile(t, other, tmp)
	later := time.Now().Add(time.Second)
	os.Chtimes(tmp, later, later)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	b2, err := c.Open(p)
	if err != nil || b2 == got[0] {
		t.Fatalf("rebuilt file: %v, same binary %v", err, b2 == got[0])
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(p); err != ErrCacheClosed {
		t.Fatalf("Open after Close: %v", err)
	}
}
