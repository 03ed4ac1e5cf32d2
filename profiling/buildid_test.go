package profiling

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/symbols/debugfile"
)

// TestFileBuildIDIs: the check of a recording's build-ids against the files
// here answers as debug/elf does, whether the build-id is in a PT_NOTE
// segment (gcc's files: the fast path) or only in a note section (Go's
// linker: the fallback), and refuses another build-id.
func TestFileBuildIDIs(t *testing.T) {
	paths := []string{os.Args[0]}
	if p, err := filepath.EvalSymlinks("/lib/x86_64-linux-gnu/libc.so.6"); err == nil {
		paths = append(paths, p)
	}
	for _, path := range paths {
		ef, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		id, err := debugfile.BuildID(ef)
		ef.Close()
		if err != nil || id == nil {
			t.Fatalf("%s: no build-id (%v)", path, err)
		}
		if !fileBuildIDIs(path, id) {
			t.Errorf("%s: its own build-id %x does not match", path, id)
		}
		other := append([]byte(nil), id...)
		other[len(other)-1] ^= 1
		if fileBuildIDIs(path, other) {
			t.Errorf("%s: build-id %x matches, the file's is %x", path, other, id)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBuildID(data, id) || sameBuildID(data, other) {
			t.Errorf("%s: sameBuildID on the file's bytes disagrees with fileBuildIDIs", path)
		}
	}
	if fileBuildIDIs(filepath.Join(t.TempDir(), "missing"), []byte{1}) {
		t.Error("a missing file matches")
	}
}
