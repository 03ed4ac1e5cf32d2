package profiling

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestLibcAliasesMatchPerf records a program living in libc functions that
// have several symbols at one address (recv is recv, __recv, __libc_recv
// and __GI___recv) and compares, with --no-inline, the name of every frame
// in libc with perf script's: the same pc (the same offset into it) must be
// named by the same alias, as perf's symbols__fixup_duplicate keeps it.
func TestLibcAliasesMatchPerf(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_libc_aliases.c"}, Flags: []string{"-O2"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", out}, prog, "2")
	perf := perfScript(t, out, "--no-inline", "-F", "tid,time,ip,sym,symoff,dso")
	got, _ := sondeSamplesNamed(t, out, Options{NoInline: true}, ScriptName)
	compared, differ := 0, 0
	names := map[string]int{}
	for _, w := range perf {
		g := got[w.key]
		for i := range w.names {
			if i >= len(g.names) || !isLibc(w.mods[i]) || !isLibc(g.mods[i]) {
				continue
			}
			wn, woff, _ := strings.Cut(w.names[i], "+0x")
			gn, goff, _ := strings.Cut(g.names[i], "+0x")
			if woff != goff || woff == "" {
				continue // not the same pc (a walk that parted earlier)
			}
			compared++
			names[wn]++
			if wn != gn {
				if differ < 10 {
					t.Errorf("%s frame %d: sonde %s, perf %s", w.key, i, g.names[i], w.names[i])
				}
				differ++
			}
		}
	}
	t.Logf("%d libc frames compared, %d distinct names, %d differ", compared, len(names), differ)
	if compared < 200 || names["__libc_recv"] == 0 {
		t.Errorf("too few libc frames to compare (%d; __libc_recv %d): %v", compared, names["__libc_recv"], fmt.Sprint(names))
	}
}

func isLibc(mod string) bool { return strings.HasPrefix(filepath.Base(mod), "libc.so") }
