package testprog

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	perfOnce   sync.Once
	perfReason string
)

// RequirePerf skips the test, saying why, when `perf record` cannot record
// here (no perf binary, or perf_event_open refused). scripts/setup installs
// Debian's linux-perf, so on a machine set up for the tests this only skips
// where the kernel says no.
func RequirePerf(t testing.TB) {
	t.Helper()
	perfOnce.Do(func() {
		if _, err := exec.LookPath("perf"); err != nil {
			perfReason = "no perf binary (scripts/setup installs linux-perf)"
			return
		}
		out := filepath.Join(t.TempDir(), "probe.data")
		cmd := exec.Command("perf", "record", "-q", "-e", "cpu-clock", "-o", out, "--", "true")
		if b, err := cmd.CombinedOutput(); err != nil {
			perfReason = "perf record fails here: " + strings.TrimSpace(string(b))
		}
	})
	if perfReason != "" {
		t.Skipf("SKIP (machine): %s", perfReason)
	}
}

// PerfRecord runs `perf record -q -e cpu-clock OPTIONS -- PROG ARGS...`
// (OPTIONS must include -o) and fails the test if perf does.
func PerfRecord(t testing.TB, options []string, prog string, args ...string) {
	t.Helper()
	RequirePerf(t)
	argv := append([]string{"record", "-q", "-e", "cpu-clock"}, options...)
	argv = append(argv, "--", prog)
	argv = append(argv, args...)
	cmd := exec.Command("perf", argv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("perf %s: %v\n%s", strings.Join(argv, " "), err, stderr.String())
	}
}
