package profiling

// Regressions found on the third set of real programs
// (bench/perf/REAL-PROGRAMS.md, "Third trial"): each records a Debian
// program the way a profiler user does and compares with perf's reading.

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestOpenSSLAssemblyCallers: OpenSSL's AES-GCM (aesni_gcm_encrypt, perlasm
// with CFI) keeps its CFA in %rax across calls to its own routines, which
// leave %rax alone. The walk from _aesni_ctr32_ghash_6x must go on with the
// callee's %rax, as perf's libunwind does, up to EVP_EncryptUpdate and
// main's callers; it stopped after the first caller in 82% of samples.
func TestOpenSSLAssemblyCallers(t *testing.T) {
	testprog.RequirePerf(t)
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("SKIP (machine): no openssl (scripts/setup installs it)")
	}
	out := filepath.Join(t.TempDir(), "perf.data")
	testprog.PerfRecord(t, []string{"-F", "999", "--call-graph", "dwarf", "-o", out},
		openssl, "speed", "-seconds", "1", "-bytes", "16384", "-evp", "aes-128-gcm")
	agreeWithPerf(t, out, Options{NoInline: true}, "EVP_EncryptUpdate")
}
