package symbols

import (
	stddwarf "debug/dwarf"
	"debug/elf"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestSplitDWARF4SkeletonRanges: in GCC's split DWARF 4, a skeleton unit's
// DW_AT_GNU_ranges_base counts its split unit's range lists; its own
// DW_AT_ranges (a unit in several ranges: hot, cold and startup code) is an
// offset of its own, as gdb and elfutils read it. The second unit of a
// two-unit program has both, with a base that is not 0: every address of
// the split build must give the frames of the same build without split
// DWARF, and the cold part's function must be gdb's.
func TestSplitDWARF4SkeletonRanges(t *testing.T) {
	srcs := []string{"split4_ranges_b.c", "split4_ranges_a.c"}
	flags := []string{"-O2", "-gdwarf-4"}
	plainPath := testprog.Build(t, testprog.Spec{Sources: srcs, Flags: flags, Name: "split4_ranges_plain"})
	// Built in place (not through testprog, which moves its outputs), so
	// that gdb finds the .dwo files where the skeletons say they are.
	dir := t.TempDir()
	splitPath := filepath.Join(dir, "split4_ranges")
	gcc := exec.Command("gcc", append(append(flags, "-gsplit-dwarf", "-o", splitPath), testprog.Source(srcs[0]), testprog.Source(srcs[1]))...)
	gcc.Dir = dir
	if out, err := gcc.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	requireSkeletonRangesWithBase(t, splitPath)

	plain, split := open(t, plainPath), open(t, splitPath)
	addrs := codeAddresses(t, splitPath)
	compareAll(t, plain, split, addrs)
	if w := split.Warnings(); len(w) > 0 {
		t.Errorf("warnings: %v", w)
	}

	// work_a.cold is only in the skeleton's DW_AT_ranges.
	cold := symbolRange(t, splitPath, "work_a.cold")
	gdb := gdbChains(t, splitPath, cold)
	for _, a := range cold {
		fs, err := split.Lookup(a)
		if err != nil || len(fs) == 0 {
			t.Fatalf("%#x (work_a.cold): %v %v", a, fs, err)
		}
		g := gdb[a]
		if len(g) == 0 || fs[len(fs)-1].Function != g[len(g)-1] || g[len(g)-1] != "work_a" {
			t.Errorf("%#x (work_a.cold): sonde %+v, gdb %v", a, fs, g)
		}
	}
}

// requireSkeletonRangesWithBase fails unless a skeleton unit of path has
// both DW_AT_ranges and a DW_AT_GNU_ranges_base other than 0 (read with
// the standard library's reader): the case the test is about.
func requireSkeletonRangesWithBase(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		base, _ := e.Val(stddwarf.Attr(0x2132)).(int64) // DW_AT_GNU_ranges_base
		if e.Tag == stddwarf.TagCompileUnit && e.AttrField(stddwarf.AttrRanges) != nil && base != 0 {
			return
		}
		r.SkipChildren()
	}
	t.Fatalf("%s: no skeleton unit with DW_AT_ranges and a DW_AT_GNU_ranges_base other than 0", path)
}

// symbolRange returns every byte address of ELF symbol name in path.
func symbolRange(t *testing.T, path, name string) []uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name && s.Size > 0 {
			var out []uint64
			for a := s.Value; a < s.Value+s.Size; a++ {
				out = append(out, a)
			}
			return out
		}
	}
	t.Fatalf("%s has no symbol %s (GCC did not split work_a into hot and cold parts)", path, name)
	return nil
}
