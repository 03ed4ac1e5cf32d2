package profiling

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
)

// benchRecording is the recording the benchmarks read: $SONDE_PERF_DATA (a
// recording whose binaries are still in place, e.g. bench/perf/run.sh's), or
// one made here of perf_spin, 1 s at 4 kHz with dwarf call graphs.
func benchRecording(b *testing.B) string {
	if p := os.Getenv("SONDE_PERF_DATA"); p != "" {
		return p
	}
	prog := testprog.Build(b, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2", "-g"}})
	out := filepath.Join(b.TempDir(), "perf.data")
	testprog.PerfRecord(b, []string{"-F", "4000", "--call-graph", "dwarf", "-o", out}, prog, "1000")
	return out
}

// BenchmarkFolded is `sonde perf folded` without the process start-up: open
// the recording, unwind and name every sample (on GOMAXPROCS workers:
// -cpu 1,2), aggregate the folded stacks. One op is the whole recording;
// samples/s is the figure to compare.
func BenchmarkFolded(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts Options
	}{{"inline", Options{}}, {"no-inline", Options{NoInline: true}}} {
		b.Run(tc.name, func(b *testing.B) {
			path := benchRecording(b)
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(st.Size())
			var samples uint64
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rec, err := OpenRecording(path, tc.opts)
				if err != nil {
					b.Fatal(err)
				}
				if n, err := strconv.Atoi(os.Getenv("SONDE_READAHEAD")); err == nil {
					rec.reader.SetReadAhead(n)
				}
				f := NewFolded()
				if err := rec.Each(func(s *Sample) error { f.Add(s); return nil }); err != nil {
					b.Fatal(err)
				}
				samples += rec.Samples
				rec.Close()
			}
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
			// On a shared machine the wall time says little: the
			// process's CPU time (user+sys, all threads) is the figure.
			b.ReportMetric(cpu.Seconds()*1e3/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(samples)/cpu.Seconds(), "samples/cpu-s")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
