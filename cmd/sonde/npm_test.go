package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
)

// npmModules returns the node_modules directory of the npm packages pinned
// by testdata/PKG/package-lock.json (the DebugClient's, speedscope's),
// installed as scripts/setup installs them: npm ci into a cache directory
// named by the lock file's hash, or installed there now. It skips, saying
// why, only when npm or the registry cannot be had; what names the
// packages in that message.
func npmModules(t *testing.T, pkg, what string) string {
	t.Helper()
	lock, err := os.ReadFile(testprog.Source(pkg + "/package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	dir := filepath.Join(cache, "sonde-npm", hex.EncodeToString(sum[:])[:16])
	modules := filepath.Join(dir, "node_modules")
	if dcFileExists(filepath.Join(dir, ".done")) {
		return modules
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skipf("SKIP: npm is not installed (scripts/setup installs it): %s cannot be installed", what)
	}
	// Install beside dir and rename it into place: a concurrent test
	// process never sees half an installation.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, f := range []string{"package.json", "package-lock.json"} {
		copyFile(t, testprog.Source(pkg+"/"+f), filepath.Join(tmp, f))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("SKIP: npm ci of testdata/%s failed (no registry?): %v\n%s", pkg, err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !dcFileExists(filepath.Join(dir, ".done")) {
		os.RemoveAll(dir) // an installation cut short
	}
	if err := os.Rename(tmp, dir); err != nil && !dcFileExists(filepath.Join(dir, ".done")) {
		t.Fatal(err)
	}
	return modules
}
