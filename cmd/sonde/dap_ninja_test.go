package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestDAPDebugClientNinja drives `sonde dap` with Microsoft's DebugClient
// through Debian's ninja-build, a real C++ program none of sonde's tests
// was written for, built here from its Debian source at -O0
// (testdata/dapclient/realprog.js --mode ninja): function breakpoints in
// its member functions, its State's std::map, unordered_map and vector
// members shown as gdb's printers show them and expanded to their
// elements (through pointers, by their evaluateNames), setVariable on an
// element, next and stepOut, loadedSources with its headers, the dry run's
// output and exit.
func TestDAPDebugClientNinja(t *testing.T) {
	node, modules := dcClient(t)
	bin, src := buildNinja(t)
	dir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(dir, "ninja")); err != nil {
		t.Fatal(err)
	}
	runNodeScenario(t, node, modules, "realprog.js", dir, []string{"--mode", "ninja", "--dir", dir, "--src", src}, []string{testprog.Sonde(t), "dap"})
}

// buildNinja fetches ninja-build's Debian source (apt-get source, which
// needs a deb-src line) and builds it at -O0 with g++, once: the binary
// and its sources stay in the user's cache (~/.cache/sonde-ninja), since
// the binary's DWARF names them. It returns the binary and the source's
// src directory; it skips the test when the source cannot be fetched.
func buildNinja(t *testing.T) (bin, src string) {
	t.Helper()
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	root := filepath.Join(cache, "sonde-ninja")
	bin = filepath.Join(root, "ninja")
	if dcFileExists(filepath.Join(root, ".done")) {
		srcs, _ := filepath.Glob(filepath.Join(root, "ninja-*", "src"))
		if len(srcs) == 1 {
			return bin, srcs[0]
		}
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skip("SKIP: apt-get is needed to fetch ninja-build's Debian source")
	}
	os.RemoveAll(root)
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(dir, name string, args ...string) ([]byte, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		return cmd.CombinedOutput()
	}
	if out, err := run(root, "apt-get", "source", "--download-only", "ninja-build"); err != nil {
		t.Skipf("SKIP: apt-get source ninja-build failed (a deb-src line is needed): %v\n%s", err, out)
	}
	tars, _ := filepath.Glob(filepath.Join(root, "ninja-build_*.orig.tar.gz"))
	if len(tars) != 1 {
		t.Fatalf("ninja-build's source: %v", tars)
	}
	if out, err := run(root, "tar", "xzf", tars[0]); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	srcs, _ := filepath.Glob(filepath.Join(root, "ninja-*", "src"))
	if len(srcs) != 1 {
		t.Fatalf("ninja's src directory: %v", srcs)
	}
	src = srcs[0]
	// The sources of the POSIX binary, as its configure.py lists them
	// (tests, benchmarks, Windows files, the browse tool and the re2c
	// inputs left out).
	all, _ := filepath.Glob(filepath.Join(src, "*.cc"))
	args := []string{"-g", "-O0", "-std=c++11", "-w", "-o", bin}
	for _, f := range all {
		b := filepath.Base(f)
		if strings.Contains(b, "test") || strings.Contains(b, "perftest") || strings.Contains(b, "win32") ||
			strings.Contains(b, ".in.") || strings.Contains(b, "_bench") || b == "browse.cc" {
			continue
		}
		args = append(args, b)
	}
	if out, err := run(src, "g++", args...); err != nil {
		t.Fatalf("building ninja: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(root, ".done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return bin, src
}
