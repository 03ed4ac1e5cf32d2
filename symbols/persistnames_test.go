package symbols

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/dwarf"
	"github.com/sondedbg/sonde/pcache"
)

// resetDemangleCache empties the process's demangling cache, so that what a
// later lookup finds there came from a names file.
func resetDemangleCache(t *testing.T) {
	c := &demangleCache
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}

// framesOf looks every address up and returns the frames' names and the
// demangled spellings binutils prints.
func framesOf(t *testing.T, b *Binary, addrs []uint64) []string {
	t.Helper()
	var out []string
	for _, a := range addrs {
		fs, err := b.Lookup(a)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			full, _ := DemangleLinkageName(f.LinkageName)
			out = append(out, f.Function+"|"+f.LinkageName+"|"+full)
		}
	}
	return out
}

// TestPersistedNames: the first run keeps the names it demangled in a
// names file; the next run, its process cache empty, finds every one there
// (it demangles nothing) and answers the same, C++ names included; a
// damaged names file is ignored and answers stay the same.
func TestPersistedNames(t *testing.T) {
	persistEverything(t)
	path := build(t, "dw_cxx.cc", "-O2")
	addrs := codeAddresses(t, path)
	cache := &pcache.Cache{Dir: filepath.Join(t.TempDir(), "pc")}
	opts := &Options{PersistentCache: cache}

	resetDemangleCache(t)
	b1, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := framesOf(t, b1, addrs)
	if !strings.Contains(strings.Join(want, "\n"), "|_Z") {
		t.Fatal("no C++ linkage names in the test program's frames")
	}
	key, _ := b1.dw.ef.identity()
	b1.Close()
	namesFile := cache.Path(key + "-names")
	if _, err := os.Stat(namesFile); err != nil {
		t.Fatalf("no names file after the first run: %v", err)
	}

	resetDemangleCache(t)
	b2 := openWith(t, path, opts)
	got := framesOf(t, b2, addrs)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("second run:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s := b2.dw.nameStore()
	s.mu.Lock()
	known, fresh, serr := len(s.known), len(s.fresh), s.err
	s.mu.Unlock()
	if serr != nil || known == 0 || fresh != 0 {
		t.Fatalf("second run: %d names from the file, %d demangled anew (err %v); want all from the file", known, fresh, serr)
	}

	// A damaged names file: rejected by the cache's checks, names demangled
	// again, same answers.
	data, err := os.ReadFile(namesFile)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x55
	if err := os.WriteFile(namesFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	resetDemangleCache(t)
	b3 := openWith(t, path, opts)
	if got := framesOf(t, b3, addrs); !reflect.DeepEqual(got, want) {
		t.Fatalf("damaged names file changed the answers:\n%s", strings.Join(got, "\n"))
	}
}

// TestDecodeNames: records round-trip; truncated or inflated lengths and bad
// flags are errors.
func TestDecodeNames(t *testing.T) {
	recs := []nameRecord{
		{"_Z1fv", demangleResult{"f()", "f()", true}},
		{"main", demangleResult{}},
		{"_ZN2ns1gIiEEvT_", demangleResult{"void ns::g<int>(int)", "ns::g<int>(int)", true}},
		{"_Zodd", demangleResult{"full spelling", "another", true}},
	}
	var b []byte
	for _, r := range recs {
		b = appendName(b, r.linkage, r.res)
	}
	got, err := decodeNames(b)
	if err != nil || !reflect.DeepEqual(got, recs) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for _, bad := range [][]byte{
		b[:len(b)-1],                // no flag
		b[:5],                       // string cut
		append(b[:0:0], 0xff, 0xff), // varint past the data
		append(append([]byte(nil), b...), 1, 'x', 0, 6),         // flag 6
		append(append([]byte(nil), b...), 1, 'x', 1, 'y', 4, 3), // suffix past the name
	} {
		if _, err := decodeNames(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzDecodeNames: any bytes as a names section: an error or records whose
// encoding gives the same bytes back.
func FuzzDecodeNames(f *testing.F) {
	f.Add(appendName(nil, "_Z1fv", demangleResult{"f()", "f()", true}))
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := decodeNames(b)
		if err != nil {
			return
		}
		var again []byte
		for _, r := range recs {
			again = appendName(again, r.linkage, r.res)
		}
		if len(again) > len(b) {
			t.Fatalf("%d records re-encode to %d bytes from %d", len(recs), len(again), len(b))
		}
	})
}

// TestDeclIndexOutOfOrder: declarations met out of order (a damaged sibling
// link) are found, the last one at an offset winning.
func TestDeclIndexOutOfOrder(t *testing.T) {
	x := newDeclIndex(nil, 0)
	mark := func(v uint64) declInfo { return declInfo{name: dwarf.Field{Val: v}} }
	for _, o := range []uint64{10, 30, 20, 30, 5} {
		x.add(o, mark(o))
	}
	x.add(30, mark(99))
	x.finish()
	for o, want := range map[uint64]uint64{5: 5, 10: 10, 20: 20, 30: 99} {
		if di, ok := x.get(o); !ok || di.name.Val != want {
			t.Errorf("get(%d) = %d %v, want %d", o, di.name.Val, ok, want)
		}
	}
	if _, ok := x.get(15); ok {
		t.Error("get(15) found a declaration")
	}
	var none *declIndex
	if _, ok := none.get(1); ok {
		t.Error("nil index found a declaration")
	}
	if none.prefixOf(1) != "" || x.prefixOf(7) != "" || x.prefixOf(-1) != "" {
		t.Error("a bad prefix index gave a prefix")
	}
}
