package profiling

// Regressions found on the second set of real programs
// (bench/perf/REAL-PROGRAMS.md, "second set"): each records a program the
// way a profiler user does and compares with perf's reading.

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestFramePointerAfterCallThroughMemory: a function without CFI called
// with `call *(%reg)` (ld.so's _dl_call_fini calling crtstuff's
// __do_global_dtors_aux at every exit; found in `sh -c 'true; ls ...'`)
// unwinds through its frame pointer to its caller, as perf does: the
// return address's check knew `call *%reg` but not `call *(%reg)`.
func TestFramePointerAfterCallThroughMemory(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_nocfi.c"}, Flags: []string{"-O2", "-g"}})
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", out}, prog, "300")
	want := perfScript(t, out, "--no-inline")
	got, _ := sondeSamples(t, out, Options{NoInline: true})
	inNocfi, toMain, same := 0, 0, 0
	var diffs []string
	for _, w := range want {
		g := got[w.key]
		if !slices.Contains(g.names, "nocfi") {
			continue
		}
		inNocfi++
		if slices.Contains(g.names, "main") {
			toMain++
		}
		if strings.Join(g.names, ";") == strings.Join(w.names, ";") {
			same++
		} else if len(diffs) < 5 {
			diffs = append(diffs, w.key+":\n  sonde "+strings.Join(g.names, ";")+"\n  perf  "+strings.Join(w.names, ";"))
		}
	}
	t.Logf("%d samples through nocfi, %d reach main, %d as perf script's", inNocfi, toMain, same)
	for _, d := range diffs {
		t.Log(d)
	}
	if inNocfi == 0 || toMain < inNocfi*95/100 || same < inNocfi*95/100 {
		t.Errorf("%d samples through nocfi: %d reach main, %d as perf's", inNocfi, toMain, same)
	}
}
