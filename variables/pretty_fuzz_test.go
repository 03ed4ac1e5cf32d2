package variables

import (
	"encoding/binary"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols"
)

// FuzzContainer reads every container of pp_cxx's main (libstdc++'s map,
// unordered_map, list, deque, smart pointers, ...) from arbitrary bytes:
// the value's own bytes and the memory its pointers lead to are the input
// (at a base the input's own words may point into, to make cycles). Any
// answer is fine; a panic, a hang or an unbounded allocation is not.
func FuzzContainer(f *testing.F) {
	exe, err := testprog.BuildE(testprog.Spec{Sources: []string{"pp_cxx.cc"}, Flags: []string{"-O0", "-std=c++17"}, Name: "pp_cxx"})
	if err != nil {
		f.Skip(err)
	}
	b, err := symbols.Open(exe, nil)
	if err != nil {
		f.Fatal(err)
	}
	r, err := New(b)
	if err != nil {
		f.Fatal(err)
	}
	fns, err := b.LookupFunction("main")
	if err != nil || len(fns) == 0 {
		f.Fatalf("main: %v", err)
	}
	scopes, err := r.ScopesAt(fns[0].Entry + 8)
	if err != nil {
		f.Fatal(err)
	}
	var types []*Type
	for _, s := range scopes {
		for _, v := range s.Vars {
			if t := v.Type.Strip(); t != nil && t.IsComposite() {
				types = append(types, v.Type)
			}
		}
	}
	if len(types) < 10 {
		f.Fatalf("only %d composite locals in main", len(types))
	}
	const base = 0x10000
	seed := make([]byte, 256)
	for i := 0; i+8 <= len(seed); i += 8 {
		binary.LittleEndian.PutUint64(seed[i:], base+uint64(i*3%len(seed)))
	}
	f.Add(uint8(0), seed)
	f.Add(uint8(3), make([]byte, 128))
	f.Add(uint8(7), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1, 0, 1, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, which uint8, mem []byte) {
		typ := types[int(which)%len(types)]
		size := typ.ByteSize()
		if size <= 0 || size > 4096 {
			return
		}
		val := make([]byte, size)
		copy(val, mem)
		fr := &memFrame{base: base, mem: mem}
		v := Value{Type: typ, Bytes: val, Place: PlaceMemory, Address: base}
		if c, ok := r.Container(v, fr); ok {
			kids, _ := c.Children(0, 1<<20)
			if len(kids) > MaxContainerElements {
				t.Fatalf("%d children", len(kids))
			}
		}
		_ = r.Format(v, nil, fr, FormatOptions{Pretty: true})
	})
}
