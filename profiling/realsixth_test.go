package profiling

// The sixth real-program trial (bench/perf/REAL-PROGRAMS.md, "Sixth
// trial"): Debian programs no earlier trial recorded, recorded as a
// profiler user records them and read sample by sample against perf.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestSixthTrialDebianCompressors: Debian's zstd (stripped, two worker
// threads) and lz4 (stripped, its high-compression path) compressing a few
// MB: sonde reads as many samples as perf report --stats counts, and every
// sample's frames (function+offset, --no-inline) are perf script's, or
// extend them where perf's walk stops (clone3's parent side), in at least
// 99% of the samples.
func TestSixthTrialDebianCompressors(t *testing.T) {
	testprog.RequirePerf(t)
	input := filepath.Join(t.TempDir(), "in.txt")
	var text strings.Builder
	for i := 0; text.Len() < 6<<20; i++ {
		fmt.Fprintf(&text, "line %d: %x the quick brown fox %d jumps over the lazy dog %q\n", i, i*2654435761, i%977, strings.Repeat("ab", i%13))
	}
	if err := os.WriteFile(input, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"zstd", []string{"-12", "-T2", "-f", input, "-o", "/dev/null"}},
		{"lz4", []string{"-9", "-f", input, "/dev/null"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog, err := exec.LookPath(tc.name)
			if err != nil {
				t.Skipf("SKIP (machine): no %s (scripts/setup installs it)", tc.name)
			}
			out := filepath.Join(t.TempDir(), "perf.data")
			testprog.PerfRecord(t, []string{"-F", "999", "--call-graph", "dwarf", "-o", out}, prog, tc.args...)
			if n, want := recordingSamples(t, out), perfStatsSamples(t, out); n != want {
				t.Errorf("sonde read %d samples, perf report --stats counts %d", n, want)
			}
			perf := perfScript(t, out, "--no-inline", "-F", "tid,time,ip,sym,symoff,dso")
			got, _ := sondeSamplesNamed(t, out, Options{NoInline: true}, ScriptName)
			var c tally
			for _, w := range perf {
				g := got[w.key]
				n := len(w.names)
				c.add(len(g.names) >= n && sameFrames(g.names[:n], w.names), func() string {
					return fmt.Sprintf("%s:\n  sonde %s\n  perf  %s", w.key, strings.Join(g.names, ";"), strings.Join(w.names, ";"))
				})
			}
			c.log(t, "samples alike")
			if len(got) != len(perf) || !c.atLeast(99) {
				t.Errorf("%v samples have perf's frames; sonde %d samples, perf script %d", &c, len(got), len(perf))
			}
		})
	}
}

// perfStatsSamples is perf report --stats's count of SAMPLE records.
func perfStatsSamples(t *testing.T, path string) uint64 {
	t.Helper()
	stats, err := exec.Command("perf", "report", "--stats", "-i", path).Output()
	if err != nil {
		t.Fatalf("perf report --stats: %v", err)
	}
	var n uint64
	for _, l := range strings.Split(string(stats), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "SAMPLE" && f[1] == "events:" {
			fmt.Sscan(f[2], &n)
			break
		}
	}
	return n
}

// recordingSamples is how many samples sonde reads from path.
func recordingSamples(t *testing.T, path string) uint64 {
	t.Helper()
	rec, err := OpenRecording(path, Options{NoInline: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if err := rec.Each(func(*Sample) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return rec.Samples
}
