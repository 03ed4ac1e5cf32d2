package vartest

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestDWONames reads the .dwo names of split builds (DWARF 4's GNU
// attributes and DWARF 5's skeleton units, whose strings are indexed) and
// compares them with what readelf prints.
func TestDWONames(t *testing.T) {
	readelf, err := exec.LookPath("readelf")
	if err != nil {
		t.Skip("readelf (binutils) is needed to compare with")
	}
	for _, v := range []string{"4", "5"} {
		t.Run("dwarf"+v, func(t *testing.T) {
			exe := testprog.Build(t, testprog.Spec{Sources: []string{"split4_vars.c"},
				Flags: []string{"-O0", "-gdwarf-" + v, "-gsplit-dwarf"}, Name: "split4_O0-vartest" + v})
			got, err := dwoNames(exe)
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(readelf, "--debug-dump=info", exe).Output()
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			re := regexp.MustCompile(`DW_AT_(?:GNU_)?dwo_name\s*:\s*(?:\(indirect[^)]*\):\s*)?(\S+)`)
			for _, m := range re.FindAllSubmatch(out, -1) {
				want = append(want, string(m[1]))
			}
			if len(want) == 0 {
				t.Fatalf("readelf shows no dwo name:\n%s", out)
			}
			var bases []string
			for _, g := range got {
				if !filepath.IsAbs(g) {
					t.Errorf("%s: not joined with the compilation directory", g)
				}
				bases = append(bases, filepath.Base(g))
			}
			for i := range want {
				want[i] = filepath.Base(want[i])
			}
			if !slices.Equal(bases, want) {
				t.Fatalf("dwo names %q, readelf says %q", got, want)
			}
		})
	}
}
