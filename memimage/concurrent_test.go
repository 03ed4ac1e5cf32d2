package memimage

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"testing"
)

// TestConcurrentReads reads from several goroutines, through the image and
// through Readers, while another mutates the image and the cache's byte limit
// keeps evicting mappings (and the Readers' resident chunks) under them.
// Every read must return the file's bytes, or one whole version of a section
// being swapped. Run with -race to check the locking.
func TestConcurrentReads(t *testing.T) {
	page := os.Getpagesize()
	dir := t.TempDir()
	c := NewSectionCache(uint64(2 * page)) // three files, room for two: constant eviction
	im := New("concurrent")
	var files [][]byte
	for i := range 3 {
		path, data := writeFile(t, dir, fmt.Sprint("f", i), 2*page, byte(i))
		id, err := c.AddFile(path, uint64(page/2), uint64(page), uint64(i+1)*0x100000)
		if err != nil {
			t.Fatal(err)
		}
		if err := im.AddCached(c, id, AnyASID); err != nil {
			t.Fatal(err)
		}
		files = append(files, data[page/2:page/2+page])
	}
	x, _ := NewMemorySection("x", bytes.Repeat([]byte{0x11}, 64))
	y, _ := NewMemorySection("y", bytes.Repeat([]byte{0x22}, 64))
	im.Add(x, p1, 0x5000)

	const readers, rounds = 4, 2000
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	stop, mutatorDone := make(chan struct{}), make(chan struct{})
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 48)
			rd := im.NewReader(p1) // every other read goes through a Reader
			for i := range rounds {
				f := (i + r) % 3
				off := uint64((i * 131) % (page - 48))
				var n int
				var err error
				if i%2 == 0 {
					n, err = rd.ReadFull(buf, uint64(f+1)*0x100000+off)
				} else {
					n, err = im.ReadFull(buf, p1, uint64(f+1)*0x100000+off)
				}
				if err != nil || !bytes.Equal(buf[:n], files[f][off:off+48]) {
					errs <- fmt.Errorf("file %d at +%d: %d bytes, %v", f, off, n, err)
					return
				}
				if i%2 == 0 {
					n, _, err = rd.Read(buf[:16], 0x5008)
				} else {
					n, _, err = im.Read(buf[:16], p1, 0x5008)
				}
				if err != nil || n != 16 || !(bytes.Equal(buf[:16], x.data[:16]) || bytes.Equal(buf[:16], y.data[:16])) {
					errs <- fmt.Errorf("swapped section: % x, %v", buf[:n], err)
					return
				}
			}
		}()
	}
	go func() {
		defer close(mutatorDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s := x
			if i%2 == 1 {
				s = y
			}
			im.Add(s, p1, 0x5000)
			im.SetOriginal(p1, 0x6000, []byte{1})
			im.ClearOriginal(p1, 0x6000, 1)
			c.SetLimit(uint64((1 + i%3) * page))
		}
	}()
	wg.Wait()
	close(stop)
	<-mutatorDone
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got, limit := c.MappedBytes(), uint64(3*page); got > limit {
		t.Errorf("MappedBytes %d over the largest limit %d", got, limit)
	}
}
