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
	r, types := containerTypes(f, exe, "main", false)
	f.Add(uint8(0), selfPointing(256, 3))
	f.Add(uint8(3), make([]byte, 128))
	f.Add(uint8(7), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1, 0, 1, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, which uint8, mem []byte) {
		readContainer(t, r, types[int(which)%len(types)], mem)
	})
}

// fuzzBase is the address the fuzzed memory is at.
const fuzzBase = 0x10000

// containerTypes opens exe and returns the composite types of fn's locals
// (of its nested scopes too when nested) a few bytes into fn: at least 10.
func containerTypes(f *testing.F, exe, fn string, nested bool) (*Reader, []*Type) {
	b, err := symbols.Open(exe, nil)
	if err != nil {
		f.Fatal(err)
	}
	r, err := New(b)
	if err != nil {
		f.Fatal(err)
	}
	fns, err := b.LookupFunction(fn)
	if err != nil || len(fns) == 0 {
		f.Fatalf("%s: %v", fn, err)
	}
	scopes, err := r.ScopesAt(fns[0].Entry + 8)
	if err != nil {
		f.Fatal(err)
	}
	var types []*Type
	var walk func(*Scope)
	walk = func(s *Scope) {
		for _, v := range s.Vars {
			if t := v.Type.Strip(); t != nil && t.IsComposite() {
				types = append(types, v.Type)
			}
		}
		for _, c := range s.children {
			if nested {
				walk(c)
			}
		}
	}
	for _, s := range scopes {
		walk(s)
	}
	if len(types) < 10 {
		f.Fatalf("only %d composite locals in %s", len(types), fn)
	}
	return r, types
}

// selfPointing is n bytes of words pointing into themselves at fuzzBase
// (word i at i*step bytes), to make cycles.
func selfPointing(n, step int) []byte {
	seed := make([]byte, n)
	for i := 0; i+8 <= len(seed); i += 8 {
		binary.LittleEndian.PutUint64(seed[i:], fuzzBase+uint64(i*step%len(seed)))
	}
	return seed
}

// readContainer reads a value of type typ from mem (its bytes, and the
// memory at fuzzBase), lists its children and formats it.
func readContainer(t *testing.T, r *Reader, typ *Type, mem []byte) {
	size := typ.ByteSize()
	if size <= 0 || size > 4096 {
		return
	}
	val := make([]byte, size)
	copy(val, mem)
	fr := &memFrame{base: fuzzBase, mem: mem}
	v := Value{Type: typ, Bytes: val, Place: PlaceMemory, Address: fuzzBase}
	if c, ok := r.Container(v, fr); ok {
		kids, _ := c.Children(0, 1<<20)
		if len(kids) > MaxContainerElements {
			t.Fatalf("%d children", len(kids))
		}
	}
	_ = r.Format(v, nil, fr, FormatOptions{Pretty: true})
	_ = r.Format(v, nil, fr, FormatOptions{})
}
