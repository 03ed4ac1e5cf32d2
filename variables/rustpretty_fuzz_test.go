package variables

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
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
	r, types := containerTypes(f, exe, "pp_rust::main", true)
	f.Add(uint8(0), selfPointing(512, 5))
	f.Add(uint8(5), make([]byte, 256))
	f.Add(uint8(9), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x30})
	f.Fuzz(func(t *testing.T, which uint8, mem []byte) {
		readContainer(t, r, types[int(which)%len(types)], mem)
	})
}
