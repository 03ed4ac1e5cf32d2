package testprog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Rustc returns the path of rustc: on PATH, or rustup's in ~/.cargo/bin
// (where scripts/setup installs it); "" when there is none.
func Rustc() string {
	if p, err := exec.LookPath("rustc"); err == nil {
		return p
	}
	if p := os.ExpandEnv("$HOME/.cargo/bin/rustc"); p != "" {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// RequireRustc returns rustc's path, or skips t saying it is not installed.
func RequireRustc(t testing.TB) string {
	t.Helper()
	p := Rustc()
	if p == "" {
		t.Skip("SKIP: rustc is not installed (scripts/setup installs it)")
	}
	return p
}

// BuildRust compiles testdata's src with rustc -g and args (such as "-C",
// "opt-level=0") as name, and returns its path; t is skipped when rustc is
// not installed. Builds are shared and kept as Build's are (keyed by rustc,
// the arguments and the source): a rustc run costs seconds, and several
// packages' tests build the same programs.
func BuildRust(t testing.TB, src, name string, args ...string) string {
	t.Helper()
	rustc := RequireRustc(t)
	path, err := BuildRustE(rustc, src, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// BuildRustE is BuildRust with rustc's path given, for callers without a
// testing.TB.
func BuildRustE(rustc, src, name string, args ...string) (string, error) {
	p := Source(src)
	data, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("testprog: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "rustc\x00%s\x00%s\x00%q\x00%s\x00%d\x00", rustc, name, args, p, len(data))
	h.Write(data)
	key := hex.EncodeToString(h.Sum(nil))[:20]
	return buildCached(key, name, func(tmp string) error {
		cmd := exec.Command(rustc, append(append([]string{"-g"}, args...), "-o", filepath.Join(tmp, name), p)...)
		cmd.Dir = tmp
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("testprog: rustc %s: %v\n%s", src, err, out)
		}
		return nil
	})
}
