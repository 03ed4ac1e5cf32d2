package symbols

import (
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentLookups: many goroutines look up the same fresh Binary
// (so units are decoded concurrently) and must get the sequential answers.
// Run with -race.
func TestConcurrentLookups(t *testing.T) {
	path := build(t, "dw_cxx.cc", "-O2")
	addrs := codeAddresses(t, path)
	ref := open(t, path)
	want := make([][]Frame, len(addrs))
	for i, a := range addrs {
		want[i], _ = ref.Lookup(a)
	}
	b := open(t, path)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed))
			for n := 0; n < 2000; n++ {
				i := r.Intn(len(addrs))
				got, err := b.Lookup(addrs[i])
				if err != nil || !reflect.DeepEqual(got, want[i]) {
					errs <- "mismatch"
					return
				}
				if n%500 == 0 {
					b.LookupFunction("corpus::Counter::bump")
					b.LookupLine("dw_cxx.cc", 12)
				}
			}
		}(int64(g))
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// TestCorruptInputsNeverPanic flips and truncates bytes of a real binary's
// debug sections; every lookup must return (frames or an error naming the
// file), never panic or hang. One bad binary does not affect another.
func TestCorruptInputsNeverPanic(t *testing.T) {
	path := build(t, "dw_inline.c", "-O2", "-gdwarf-5")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	good := open(t, path)
	addrs := codeAddresses(t, path)
	wantMain, _ := good.Lookup(addrs[len(addrs)/2])
	ef, err := openELFFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lo, hi uint64 // span of the DWARF sections in the file
	for _, s := range ef.f.Sections {
		if strings.HasPrefix(s.Name, ".debug_") {
			if lo == 0 || s.Offset < lo {
				lo = s.Offset
			}
			hi = max(hi, s.Offset+s.Size)
		}
	}
	ef.close()
	r := rand.New(rand.NewSource(1))
	dir := t.TempDir()
	for i := 0; i < 150; i++ {
		data := append([]byte(nil), orig...)
		for k := 0; k < 1+r.Intn(20); k++ {
			data[lo+uint64(r.Intn(int(hi-lo)))] = byte(r.Intn(256))
		}
		if i%10 == 0 {
			data = data[:lo+uint64(r.Intn(int(hi-lo)))]
		}
		p := filepath.Join(dir, "bad")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := Open(p, &Options{NoSearch: true})
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error does not name the file: %v", err)
			}
			continue
		}
		for j := 0; j < 50; j++ {
			_, err := b.Lookup(addrs[r.Intn(len(addrs))])
			if err != nil && !strings.Contains(err.Error(), p) {
				t.Errorf("error does not name the file: %v", err)
			}
		}
		b.LookupFunction("main")
		b.LookupLine("dw_inline.c", 30)
		b.Close()
	}
	if got, _ := good.Lookup(addrs[len(addrs)/2]); !reflect.DeepEqual(got, wantMain) {
		t.Errorf("the good binary changed its answer: %v vs %v", got, wantMain)
	}
}

// TestFileTruncatedWhileOpen: a mapped file cut short on disk (cp over a
// binary being debugged) makes lookups fail with an error naming the file,
// instead of killing the process with SIGBUS.
func TestFileTruncatedWhileOpen(t *testing.T) {
	path := build(t, "dw_cxx.cc", "-O2")
	p := filepath.Join(t.TempDir(), "victim")
	copyFile(t, path, p)
	b := open(t, p)
	addrs := codeAddresses(t, path)
	if err := os.Truncate(p, 4096); err != nil {
		t.Fatal(err)
	}
	faults := 0
	for _, a := range addrs[:200] {
		_, err := b.Lookup(a)
		if err != nil {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error does not name the file: %v", err)
			}
			faults++
		}
	}
	b.LookupFunction("main")
	b.LookupLine("dw_cxx.cc", 40)
	if faults == 0 {
		t.Fatal("no lookup noticed the truncation")
	}
}
