package variables

import (
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// FuzzRustContainer reads every composite local of pp_rust's main
// (HashMap, BTreeMap with its B-tree, BTreeSet, Vec, VecDeque, Rc, slices,
// structs printed in Rust's syntax) from arbitrary bytes, as FuzzContainer
// does for libstdc++'s: any answer but a panic, a hang or an unbounded
// allocation.
func FuzzRustContainer(f *testing.F) {
	exe := testprog.BuildRust(f, "pp_rust.rs", "pp_rust", "-C", "opt-level=0")
	r, types := containerTypes(f, exe, "pp_rust::main", true)
	f.Add(uint8(0), selfPointing(512, 5))
	f.Add(uint8(5), make([]byte, 256))
	f.Add(uint8(9), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x30})
	f.Fuzz(func(t *testing.T, which uint8, mem []byte) {
		readContainer(t, r, types[int(which)%len(types)], mem)
	})
}
