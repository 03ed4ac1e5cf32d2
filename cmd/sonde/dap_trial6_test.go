package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// The sixth real-program trial of `sonde dap` (bench/dap/REAL-PROGRAMS.md):
// Debian's lz4 (C), a program over Debian's fmt (C++) and one over Debian's
// itertools crate (Rust), live and from cores, driven by Microsoft's
// DebugClient (testdata/dapclient/trial6.js), every stop's watches, locals
// and frames compared with gdb's at the same stop, run by the script.

// runTrial6 runs trial6.js's scenario mode against `sonde dap` on the
// program build makes (a directory with it, and its source or crate).
func runTrial6(t *testing.T, mode string, build func(*testing.T) (dir, src string)) {
	node, modules := dcClient(t)
	gdbtest.Need(t)
	dir, src := build(t)
	runNodeScenario(t, node, modules, "trial6.js", dir, []string{"--mode", mode, "--dir", dir, "--src", src}, []string{testprog.Sonde(t), "dap"})
}

// trial6Lz4 builds Debian's lz4 1.9.4 command line at -O0 from its source
// (once, into ~/.cache/sonde-debsrc/lz4) and returns a directory with a
// link to it and the source directory.
func trial6Lz4(t *testing.T) (dir, src string) {
	root := buildDebianSource(t, "lz4", "lz4-*", func(t *testing.T, src, out string) {
		args := []string{"-g", "-O0", "-Ilib", "-o", filepath.Join(out, "lz4")}
		for _, pat := range []string{"programs/*.c", "lib/*.c"} {
			files, _ := filepath.Glob(filepath.Join(src, pat))
			for _, f := range files {
				rel, _ := filepath.Rel(src, f)
				args = append(args, rel)
			}
		}
		debsrcRun(t, src, "gcc", args...)
	})
	srcs, _ := filepath.Glob(filepath.Join(root, "lz4-*"))
	if len(srcs) != 1 {
		t.Fatalf("lz4's source directory: %v", srcs)
	}
	dir = t.TempDir()
	if err := os.Symlink(filepath.Join(root, "lz4"), filepath.Join(dir, "lz4")); err != nil {
		t.Fatal(err)
	}
	return dir, srcs[0]
}

// TestDAPDebugClientLz4: lz4 compressing a file: a function breakpoint on
// a static function of the library with a hit count, a logpoint (its lines
// against gdb's dprintf's), watches through a compressFunc_t function
// pointer, enums, a union (LZ4_stream_t), function values with their
// parameters; next/stepIn through the function pointer/stepOut against
// gdb's next/step/finish; setVariable; a data breakpoint; disconnect with
// terminateDebuggee false (lz4 finishes untraced, its output decompresses).
func TestDAPDebugClientLz4(t *testing.T) {
	runTrial6(t, "lz4", trial6Lz4)
}

// TestDAPDebugClientLz4Core: a core of lz4 killed while it reads its input
// from a pipe: frames and the locals of lz4's frames against gdb's.
func TestDAPDebugClientLz4Core(t *testing.T) {
	runTrial6(t, "lz4core", trial6Lz4)
}

// trial6Fmt builds Debian's fmt 9.1.0 (format.cc, os.cc: once, into
// ~/.cache/sonde-debsrc/fmtlib, as an archive) and testdata/dapreal/
// fmtreport.cc over it (once per source, under TMPDIR).
func trial6Fmt(t *testing.T) (dir, src string) {
	root := buildDebianSource(t, "fmtlib", "fmtlib-*", func(t *testing.T, src, out string) {
		for _, f := range []string{"format", "os"} {
			debsrcRun(t, src, "g++", "-g", "-O0", "-std=c++17", "-Iinclude", "-c", "-o", filepath.Join(out, f+".o"), filepath.Join("src", f+".cc"))
		}
		debsrcRun(t, out, "ar", "rcs", "libfmt.a", "format.o", "os.o")
	})
	srcs, _ := filepath.Glob(filepath.Join(root, "fmtlib-*"))
	if len(srcs) != 1 {
		t.Fatalf("fmt's source directory: %v", srcs)
	}
	prog := testprog.Source("dapreal/fmtreport.cc")
	text, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append([]byte(root), text...))
	cache := filepath.Join(os.TempDir(), "sonde-trial6", "fmt-"+hex.EncodeToString(sum[:8]))
	if !dcFileExists(filepath.Join(cache, ".done")) {
		os.RemoveAll(cache)
		if err := os.MkdirAll(cache, 0o755); err != nil {
			t.Fatal(err)
		}
		debsrcRun(t, cache, "g++", "-g", "-O0", "-std=c++17", "-I"+filepath.Join(srcs[0], "include"), "-o", "fmtreport", prog, filepath.Join(root, "libfmt.a"))
		if err := os.WriteFile(filepath.Join(cache, ".done"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir = t.TempDir()
	if err := os.Symlink(filepath.Join(cache, "fmtreport"), filepath.Join(dir, "fmtreport")); err != nil {
		t.Fatal(err)
	}
	return dir, srcs[0]
}

// TestDAPDebugClientFmt: a report printer over fmt: Report structs with a
// function pointer (Renderer) shown with C++ symbols and parameter lists,
// stepIn through it, a function breakpoint on a header template with three
// instances (fmt::v9::detail::vformat_to), fmt's value union (int128, long
// double, a custom formatter's function pointer), a breakpoint in a
// formatter template whose condition names an enum class's enumerator
// (s.unit == Unit::Mega), bit fields; frames against gdb's bt.
func TestDAPDebugClientFmt(t *testing.T) {
	runTrial6(t, "fmt", trial6Fmt)
}

// TestDAPDebugClientFmtCore: the core of fmtreport --crash, a call through a
// null Renderer (SIGSEGV at pc 0): the frame at 0 and main below it (from
// the return address the call pushed), main's locals, against gdb's.
func TestDAPDebugClientFmtCore(t *testing.T) {
	runTrial6(t, "fmtcore", trial6Fmt)
}

// trial6Tally builds either and itertools (Debian's librust-itertools-dev
// sources) as rlibs and testdata/dapreal/tally.rs over them, unwinding and
// with -C panic=abort, once per rustc and source, under TMPDIR.
func trial6Tally(t *testing.T) (dir, crate string) {
	rustc := testprog.RequireRustc(t)
	its, _ := filepath.Glob("/usr/share/cargo/registry/itertools-0.10.*")
	eis, _ := filepath.Glob("/usr/share/cargo/registry/either-1.*")
	if len(its) == 0 || len(eis) == 0 {
		t.Skip("SKIP: Debian's itertools 0.10 and either sources are not installed (scripts/setup installs librust-itertools-dev)")
	}
	it, ei := its[len(its)-1], eis[len(eis)-1]
	src := testprog.Source("dapreal/tally.rs")
	ver, err := exec.Command(rustc, "-V").Output()
	if err != nil {
		t.Fatalf("rustc -V: %v", err)
	}
	text, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(append(ver, it+ei...), text...))
	cache := filepath.Join(os.TempDir(), "sonde-trial6", "tally-"+hex.EncodeToString(sum[:8]))
	if !dcFileExists(filepath.Join(cache, ".done")) {
		os.RemoveAll(cache)
		if err := os.MkdirAll(cache, 0o755); err != nil {
			t.Fatal(err)
		}
		debsrcRun(t, cache, rustc, "--edition", "2015", "--crate-type", "rlib", "--crate-name", "either", "-g", "-C", "opt-level=0", "--cfg", `feature="use_std"`, filepath.Join(ei, "src", "lib.rs"), "-o", "libeither.rlib")
		debsrcRun(t, cache, rustc, "--edition", "2018", "--crate-type", "rlib", "--crate-name", "itertools", "-g", "-C", "opt-level=0", "--cfg", `feature="use_std"`, "--cfg", `feature="use_alloc"`, "--extern", "either=libeither.rlib", filepath.Join(it, "src", "lib.rs"), "-o", "libitertools.rlib")
		for _, v := range [][]string{{"tally"}, {"tally-abort", "-C", "panic=abort"}} {
			debsrcRun(t, cache, rustc, append([]string{"--edition", "2021", "-g", "-C", "opt-level=0", "--extern", "itertools=libitertools.rlib", "-L", ".", "-o", v[0], src}, v[1:]...)...)
		}
		if err := os.WriteFile(filepath.Join(cache, ".done"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir = t.TempDir()
	for _, f := range []string{"tally", "tally-abort"} {
		if err := os.Symlink(filepath.Join(cache, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	return dir, it
}

// TestDAPDebugClientRustItertools: tally over itertools: a table of fn
// pointers (fn (&[tally::Word]) -> usize, as rust-gdb), slices, Vec,
// enums; stepIn (Vec's deref first, as gdb's step) and stepOut; a line
// breakpoint with a hit count in the crate's generic GroupInner::step;
// values against rust-gdb's.
func TestDAPDebugClientRustItertools(t *testing.T) {
	runTrial6(t, "rust", trial6Tally)
}

// TestDAPDebugClientRustItertoolsCore: the panic=abort build's index out of
// bounds (SIGABRT): its 36 frames and tally's locals against gdb's.
func TestDAPDebugClientRustItertoolsCore(t *testing.T) {
	runTrial6(t, "rustcore", trial6Tally)
}
