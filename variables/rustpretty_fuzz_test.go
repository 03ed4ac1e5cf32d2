package variables

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols"
)

// FuzzRustContainer reads every composite local of pp_rust's main
// (HashMap, BTreeMap with its B-tree, BTreeSet, Vec, VecDeque, Rc, slices,
// structs printed in Rust's syntax) from arbitrary bytes, as FuzzContainer
// does for libstdc++'s: any answer but a panic, a hang or an unbounded
// allocation.
func FuzzRustContainer(f *testing.F) {
	rustc, err := exec.LookPath("rustc")
	if err != nil {
		rustc = os.ExpandEnv("$HOME/.cargo/bin/rustc")
		if _, err := os.Stat(rustc); err != nil {
			f.Skip("SKIP: rustc is not installed (scripts/setup installs it)")
		}
	}
	exe := filepath.Join(f.TempDir(), "pp_rust")
	if out, err := exec.Command(rustc, "-g", "-C", "opt-level=0", "-o", exe, testprog.Source("pp_rust.rs")).CombinedOutput(); err != nil {
		f.Fatalf("rustc: %v\n%s", err, out)
	}
	b, err := symbols.Open(exe, nil)
	if err != nil {
		f.Fatal(err)
	}
	r, err := New(b)
	if err != nil {
		f.Fatal(err)
	}
	fns, err := b.LookupFunction("pp_rust::main")
	if err != nil || len(fns) == 0 {
		f.Fatalf("pp_rust::main: %v", err)
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
			walk(c)
		}
	}
	for _, s := range scopes {
		walk(s)
	}
	if len(types) < 10 {
		f.Fatalf("only %d composite locals in main", len(types))
	}
	const base = 0x10000
	seed := make([]byte, 512)
	for i := 0; i+8 <= len(seed); i += 8 {
		binary.LittleEndian.PutUint64(seed[i:], base+uint64(i*5%len(seed)))
	}
	f.Add(uint8(0), seed)
	f.Add(uint8(5), make([]byte, 256))
	f.Add(uint8(9), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x30})
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
		_ = r.Format(v, nil, fr, FormatOptions{})
	})
}
