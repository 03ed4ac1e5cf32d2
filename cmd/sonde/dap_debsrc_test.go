package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestDAPDebugClientDebianC drives `sonde dap` with Microsoft's DebugClient
// through Debian's lua5.4, a C program none of sonde's tests was written
// for, built from its Debian source at -O0 (realprog.js --mode lua): a Lua
// script run with arguments and an environment variable, breakpoints by
// line in files of the source directory (not the program's), a condition,
// a hit count, a logpoint, function breakpoints (one conditional, in the
// recursive-descent parser: stepOut of its recursion), the interpreter's
// structures through pointers whose type the frame's unit only declares
// (lbaselib.c sees lua_State as "struct lua_State;": gdb and lldb expand
// it), unions, arrays, setVariable, disassemble, readMemory, the exit code;
// and a core of the interpreter killed by SIGABRT in a C function.
func TestDAPDebugClientDebianC(t *testing.T) {
	node, modules := dcClient(t)
	root := buildDebianSource(t, "lua5.4", "lua-*", buildLua)
	srcs, _ := filepath.Glob(filepath.Join(root, "lua-*", "src"))
	if len(srcs) != 1 {
		t.Fatalf("lua's src directory: %v", srcs)
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "lua"), filepath.Join(dir, "lua")); err != nil {
		t.Fatal(err)
	}
	runNodeScenario(t, node, modules, "realprog.js", dir, []string{"--mode", "lua", "--dir", dir, "--src", srcs[0]}, []string{testprog.Sonde(t), "dap"})
}

// TestDAPDebugClientDebianCxx drives `sonde dap` with Microsoft's
// DebugClient through Debian's tinyxml2 and its own test program xmltest,
// C++ none of sonde's tests was written for, built from the Debian source
// at -O0 (realprog.js --mode tinyxml2): a function breakpoint on an
// overloaded member (both overloads stop), one on a class template's
// member (MemPoolT<120>::Alloc), a local of a class its unit only declares
// (GCC describes a class with a vtable only in its key function's unit),
// stepInTargets named as frames are (demangled), stepIn {targetId},
// stepOut, the exit code and output.
func TestDAPDebugClientDebianCxx(t *testing.T) {
	node, modules := dcClient(t)
	root := buildDebianSource(t, "tinyxml2", "tinyxml2-*", func(t *testing.T, src, out string) {
		debsrcRun(t, src, "g++", "-g", "-O0", "-o", filepath.Join(out, "xmltest"), "xmltest.cpp", "tinyxml2.cpp")
	})
	srcs, _ := filepath.Glob(filepath.Join(root, "tinyxml2-*"))
	if len(srcs) != 1 {
		t.Fatalf("tinyxml2's source directory: %v", srcs)
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "xmltest"), filepath.Join(dir, "xmltest")); err != nil {
		t.Fatal(err)
	}
	runNodeScenario(t, node, modules, "realprog.js", dir, []string{"--mode", "tinyxml2", "--dir", dir, "--src", srcs[0]}, []string{testprog.Sonde(t), "dap"})
}

// buildDebianSource fetches a Debian source package (apt-get source, which
// needs a deb-src line) into ~/.cache/sonde-debsrc/NAME and builds it
// there once with build(t, srcdir, cachedir): the binaries' DWARF names
// the sources, so both stay. It returns the cache directory; it skips the
// test when the source cannot be fetched.
func buildDebianSource(t *testing.T, name, dirGlob string, build func(t *testing.T, src, out string)) string {
	t.Helper()
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	root := filepath.Join(cache, "sonde-debsrc", name)
	if dcFileExists(filepath.Join(root, ".done")) {
		return root
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skipf("SKIP: apt-get is needed to fetch %s's Debian source", name)
	}
	os.RemoveAll(root)
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("apt-get", "source", "--download-only", name)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("SKIP: apt-get source %s failed (a deb-src line is needed): %v\n%s", name, err, out)
	}
	tars, _ := filepath.Glob(filepath.Join(root, "*.orig.tar.*"))
	if len(tars) != 1 {
		t.Fatalf("%s's source: %v", name, tars)
	}
	debsrcRun(t, root, "tar", "xf", tars[0])
	srcs, _ := filepath.Glob(filepath.Join(root, dirGlob))
	if len(srcs) != 1 {
		t.Fatalf("%s's source directory (%s): %v", name, dirGlob, srcs)
	}
	build(t, srcs[0], root)
	if err := os.WriteFile(filepath.Join(root, ".done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// buildLua builds lua5.4's interpreter at -O0 from its source src into
// out (buildDebianSource's build).
func buildLua(t *testing.T, src, out string) {
	buildLuaOpt(t, filepath.Join(src, "src"), filepath.Join(out, "lua"), "-O0")
}

// buildLuaOpt compiles lua's src directory (all but luac.c) into prog.
func buildLuaOpt(t *testing.T, dir, prog, opt string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.c"))
	args := []string{"-g", opt, "-std=gnu99", "-DLUA_COMPAT_5_3", "-DLUA_USE_LINUX", "-o", prog}
	for _, f := range files {
		if b := filepath.Base(f); b != "luac.c" {
			args = append(args, b)
		}
	}
	debsrcRun(t, dir, "gcc", append(args, "-lm", "-ldl")...)
}

// debsrcRun runs a build command in dir; a failure fails the test.
func debsrcRun(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
