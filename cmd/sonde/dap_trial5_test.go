package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// The fifth real-program trial of `sonde dap` (bench/dap/REAL-PROGRAMS.md):
// programs no sonde test was written for, driven by Microsoft's DebugClient
// (testdata/dapclient/trial5.js), the values checked being gdb's at the same
// stops.

// TestDAPDebugClientRustStrsim: a Rust program (testdata/dapreal/fuzzy.rs)
// over Debian's strsim crate (librust-strsim-dev's source, built with rustc
// without cargo): breakpoints in the program and in the dependency (with a
// condition), stepIn into the crate and std, stepOut, next; String, &str,
// Vec<char>, slices, HashMap, Rc, Box<dyn Fn>, enums, a closure's frame;
// slices and Vecs subscripted in watches; a panic stopped at rust_panic;
// a core of the same panic built with -C panic=abort, against gdb's bt.
func TestDAPDebugClientRustStrsim(t *testing.T) {
	node, modules := dcClient(t)
	crates, _ := filepath.Glob("/usr/share/cargo/registry/strsim-0.10.*")
	if len(crates) == 0 {
		t.Skip("SKIP: Debian's strsim 0.10 source is not installed (scripts/setup installs librust-strsim-dev)")
	}
	dir := buildFuzzy(t, crates[len(crates)-1])
	runNodeScenario(t, node, modules, "trial5.js", dir, []string{"--mode", "rust", "--dir", dir, "--src", crates[len(crates)-1]}, []string{testprog.Sonde(t), "dap"})
}

// buildFuzzy builds strsim as an rlib and fuzzy over it twice (unwinding
// and -C panic=abort) at -O0, once per rustc, crate and program: into
// TMPDIR/sonde-trial5/KEY, returning a directory of links to them.
func buildFuzzy(t *testing.T, crate string) string {
	rustc := testprog.RequireRustc(t)
	src := testprog.Source("dapreal/fuzzy.rs")
	ver, err := exec.Command(rustc, "-V").Output()
	if err != nil {
		t.Fatalf("rustc -V: %v", err)
	}
	prog, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(append(ver, crate...), prog...))
	cache := filepath.Join(os.TempDir(), "sonde-trial5", hex.EncodeToString(sum[:8]))
	if !dcFileExists(filepath.Join(cache, ".done")) {
		os.RemoveAll(cache)
		if err := os.MkdirAll(cache, 0o755); err != nil {
			t.Fatal(err)
		}
		lib := filepath.Join(cache, "libstrsim.rlib")
		debsrcRun(t, cache, rustc, "--edition", "2015", "--crate-type", "rlib", "--crate-name", "strsim", "-g", "-C", "opt-level=0", filepath.Join(crate, "src", "lib.rs"), "-o", lib)
		debsrcRun(t, cache, rustc, "--edition", "2021", "-g", "-C", "opt-level=0", "--extern", "strsim="+lib, "-o", filepath.Join(cache, "fuzzy"), src)
		debsrcRun(t, cache, rustc, "--edition", "2021", "-g", "-C", "opt-level=0", "-C", "panic=abort", "--extern", "strsim="+lib, "-o", filepath.Join(cache, "fuzzy-abort"), src)
		if err := os.WriteFile(filepath.Join(cache, ".done"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	for _, f := range []string{"fuzzy", "fuzzy-abort"} {
		if err := os.Symlink(filepath.Join(cache, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDAPDebugClientYamlCpp: yaml-cpp 0.7.0's parse utility (C++11, STL:
// std::vector, std::shared_ptr, std::set, std::pair, references to
// std::string), built from its Debian source at -O0 (once, 30 s of CPU): a
// breakpoint whose condition compares a const std::string & with a literal,
// watches through shared_ptrs (*sp, sp->m, as gdb's xmethods), casts and
// members, stepIn into a header and stepOut as gdb's step and finish; a
// ParserException thrown and caught (cpp_throw, cpp_catch) with the
// throwing frames' locals.
func TestDAPDebugClientYamlCpp(t *testing.T) {
	node, modules := dcClient(t)
	root := buildDebianSource(t, "yaml-cpp", "yaml-cpp-*", func(t *testing.T, src, out string) {
		args := []string{"-g", "-O0", "-std=c++11", "-Iinclude", "-Isrc", "-o", filepath.Join(out, "yamlparse")}
		for _, pat := range []string{"src/*.cpp", "src/contrib/*.cpp"} {
			files, _ := filepath.Glob(filepath.Join(src, pat))
			for _, f := range files {
				rel, _ := filepath.Rel(src, f)
				args = append(args, rel)
			}
		}
		debsrcRun(t, src, "g++", append(args, "util/parse.cpp")...)
	})
	srcs, _ := filepath.Glob(filepath.Join(root, "yaml-cpp-*"))
	if len(srcs) != 1 {
		t.Fatalf("yaml-cpp's source directory: %v", srcs)
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "yamlparse"), filepath.Join(dir, "yamlparse")); err != nil {
		t.Fatal(err)
	}
	runNodeScenario(t, node, modules, "trial5.js", dir, []string{"--mode", "yaml", "--dir", dir, "--src", srcs[0]}, []string{testprog.Sonde(t), "dap"})
}

// TestDAPDebugClientMujsCore: a core of Debian's mujs 1.3.2 (a JavaScript
// interpreter in C, built from its Debian source at -O0) killed by SIGSEGV
// while a script waits in readline(): attach {program, coreFile}, every
// frame's function and line against gdb's bt, every scalar local and
// argument of the interpreter's frames against gdb's info locals and info
// args, read at run time from gdb on the same core.
func TestDAPDebugClientMujsCore(t *testing.T) {
	node, modules := dcClient(t)
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Skip("SKIP: gdb is needed to compare with (scripts/setup installs it)")
	}
	root := buildDebianSource(t, "mujs", "mujs-*", func(t *testing.T, src, out string) {
		debsrcRun(t, src, "gcc", "-g", "-O0", "-o", filepath.Join(out, "mujs"), "one.c", "main.c", "-lm")
	})
	srcs, _ := filepath.Glob(filepath.Join(root, "mujs-*"))
	if len(srcs) != 1 {
		t.Fatalf("mujs's source directory: %v", srcs)
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "mujs"), filepath.Join(dir, "mujs")); err != nil {
		t.Fatal(err)
	}
	runNodeScenario(t, node, modules, "trial5.js", dir, []string{"--mode", "mujs", "--dir", dir, "--src", srcs[0]}, []string{testprog.Sonde(t), "dap"})
}

// TestDAPDebugClientJqStackOverflowCore: a real crash of a Debian program,
// jq 1.6 (built as TestDAPDebugClientJq builds it) freeing an array nested
// 200000 deep by recursion until the stack overflows (SIGSEGV): the core's
// top frames and their variables against gdb's on the same core, and the
// stack's end where the unwinder stops (4096 frames; gdb walks 209619 in a
// minute) marked "(More stack frames follow...)".
func TestDAPDebugClientJqStackOverflowCore(t *testing.T) {
	node, modules := dcClient(t)
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Skip("SKIP: gdb is needed to compare with (scripts/setup installs it)")
	}
	root := buildDebianSource(t, "jq", "jq-*", buildJq)
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "jq"), filepath.Join(dir, "jq")); err != nil {
		t.Fatal(err)
	}
	runNodeScenario(t, node, modules, "trial5.js", dir, []string{"--mode", "jqcore", "--dir", dir, "--src", root}, []string{testprog.Sonde(t), "dap"})
}
