// Package testprog compiles the small C and C++ programs under the repository's
// testdata/ directory for tests that debug real processes.
//
// Builds are keyed by the source paths and contents, the compiler and its flags
// (debug information records the paths), and kept in
// one directory under os.TempDir, so the packages of one `go test ./...` run share
// them and no test ever sees a stale binary. Concurrent builds of the same key
// (from parallel test binaries) are safe: each writes a private file and renames it
// into place.
package testprog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Spec describes one program to build.
type Spec struct {
	// Sources are file names relative to testdata/, e.g. "threads.c". A ".cc" or
	// ".cpp" source selects g++ instead of gcc.
	Sources []string
	// Flags are passed to the compiler before the sources (e.g. "-O2", "-gdwarf-4").
	// "-g" and "-pthread" are always added; pass "-g0" to drop debug info.
	Flags []string
	// Name is the output file name; it defaults to the first source without its
	// extension. Split-DWARF builds put their .dwo files next to it.
	Name string
}

var (
	mu    sync.Mutex
	built = map[string]string{}
)

// Root returns the repository root (the directory holding go.mod).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Source returns the absolute path of a file under testdata/.
func Source(name string) string { return filepath.Join(Root(), "testdata", name) }

// Build compiles spec and returns the path of the executable. It fails the test
// (t.Fatal) when the compiler is missing or the build fails.
func Build(t testing.TB, spec Spec) string {
	t.Helper()
	path, err := BuildE(spec)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// BuildE is Build for callers without a testing.TB (benchmark scripts, fuzz setup).
func BuildE(spec Spec) (string, error) {
	if len(spec.Sources) == 0 {
		return "", fmt.Errorf("testprog: no sources")
	}
	compiler := "gcc"
	for _, s := range spec.Sources {
		if strings.HasSuffix(s, ".cc") || strings.HasSuffix(s, ".cpp") {
			compiler = "g++"
		}
	}
	name := spec.Name
	if name == "" {
		base := filepath.Base(spec.Sources[0])
		name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	args := append([]string{"-g", "-pthread"}, spec.Flags...)

	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%q\x00", compiler, name, args)
	var srcPaths []string
	for _, s := range spec.Sources {
		p := Source(s)
		data, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("testprog: %w", err)
		}
		// The path is part of the key: DWARF records it, and tests compare it.
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(data))
		h.Write(data)
		srcPaths = append(srcPaths, p)
	}
	key := hex.EncodeToString(h.Sum(nil))[:20]
	return buildCached(key, name, func(tmp string) error {
		if _, err := exec.LookPath(compiler); err != nil {
			return fmt.Errorf("testprog: %s not found: the tests need a C compiler", compiler)
		}
		cmdArgs := append(append([]string{}, args...), srcPaths...)
		cmdArgs = append(cmdArgs, "-o", filepath.Join(tmp, name))
		cmd := exec.Command(compiler, cmdArgs...)
		cmd.Dir = tmp
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("testprog: %s %s: %v\n%s", compiler, strings.Join(cmdArgs, " "), err, msg)
		}
		return nil
	})
}

// buildCached returns the program name built under key: built by this
// process already, or by an earlier one (its directory under os.TempDir is
// marked done), or now by build, which writes its outputs (the program and
// any .dwo files) into the private directory it is given; they are moved
// into place after, so concurrent test binaries never see half a build.
func buildCached(key, name string, build func(tmp string) error) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[key]; ok {
		return p, nil
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("sonde-testprog-%d", os.Getuid()), key)
	out := filepath.Join(dir, name)
	if _, err := os.Stat(filepath.Join(dir, ".done")); err == nil {
		built[key] = out
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("testprog: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", fmt.Errorf("testprog: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := build(tmp); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return "", fmt.Errorf("testprog: %w", err)
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(tmp, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return "", fmt.Errorf("testprog: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".done"), nil, 0o644); err != nil {
		return "", fmt.Errorf("testprog: %w", err)
	}
	built[key] = out
	return out, nil
}
