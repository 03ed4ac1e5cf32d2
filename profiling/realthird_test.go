package profiling

// Regressions found on the third set of real programs
// (bench/perf/REAL-PROGRAMS.md, "Third trial"): each records a Debian
// program the way a profiler user does and compares with perf's reading.

import (
	"os/exec"
	"path/filepath"
	"strings"
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

// TestJITDumpInjected: `perf inject --jit` turns node's jitdump into
// jitted-PID-N.so files mapped where the code ran, node's embedded builtins
// among them, inside node's own text. Frames in node's text after such a
// mapping were unnamed (one module spanned node's text and hid the
// jitted files, clipped it lost node's text beyond them); perf names
// them, and the JIT frames from the .so files.
func TestJITDumpInjected(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP (-short): perf inject writes ~2,000 files and sonde reads them (8-25 s)")
	}
	testprog.RequirePerf(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIP (machine): no node (scripts/setup installs nodejs)")
	}
	dir := t.TempDir()
	raw, out := filepath.Join(dir, "raw.data"), filepath.Join(dir, "perf.data")
	js := `function f(x){let s=0;for(let i=0;i<x;i++){s+=Math.sqrt(i)*i%7;}return s}
let t=0; const end=Date.now()+300; while(Date.now()<end){t+=f(20000)} console.log(t)`
	rec := exec.Command("perf", "record", "-q", "-k", "1", "-e", "cpu-clock", "-F", "2000", "-g", "-o", raw, "--", node, "--perf-prof", "-e", js)
	rec.Dir = dir // node writes jit-PID.dump here, perf inject the .so files
	if b, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, b)
	}
	if b, err := exec.Command("perf", "inject", "--jit", "-i", raw, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("perf inject --jit: %v\n%s", err, b)
	}
	perf := perfScript(t, out, "--no-inline", "-F", "tid,time,ip,sym,symoff,dso")
	got, _ := sondeSamplesNamed(t, out, Options{NoInline: true}, ScriptName)
	jitted, unnamed, same := 0, 0, 0
	for _, w := range perf {
		g := got[w.key]
		if n := len(w.names); len(g.names) >= n && sameFrames(g.names[:n], w.names) {
			same++
		}
		for i, name := range w.names {
			if strings.Contains(w.mods[i], "jitted-") {
				jitted++
			}
			if i < len(g.names) && name != "[unknown]" && !strings.HasSuffix(name, "+0x0") && g.names[i] == "[unknown]" && g.mods[i] == w.mods[i] {
				unnamed++
				t.Logf("%s frame %d: perf %s (%s), sonde unnamed", w.key, i, name, w.mods[i])
			}
		}
	}
	t.Logf("%d samples, %d alike, %d frames in jitted files, %d frames perf names and sonde does not", len(perf), same, jitted, unnamed)
	if jitted == 0 || unnamed > 0 || same < len(perf)*97/100 {
		t.Errorf("%d of %d samples alike, %d frames in jitted files, %d named by perf only", same, len(perf), jitted, unnamed)
	}
}
