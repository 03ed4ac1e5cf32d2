package testprog

import (
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
// "opt-level=0") into t's temporary directory as name, and returns its
// path; t is skipped when rustc is not installed.
func BuildRust(t testing.TB, src, name string, args ...string) string {
	t.Helper()
	rustc := RequireRustc(t)
	exe := filepath.Join(t.TempDir(), name)
	cmd := exec.Command(rustc, append(append([]string{"-g"}, args...), "-o", exe, Source(src))...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rustc %s: %v\n%s", src, err, out)
	}
	return exe
}
