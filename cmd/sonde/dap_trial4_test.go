package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// The fourth real-program trial of `sonde dap` (bench/dap/REAL-PROGRAMS.md):
// programs built at -O0 from Debian sources no sonde test was written for,
// driven by Microsoft's DebugClient (testdata/dapclient/trial4.js), the
// values checked being gdb's at the same stops.

// TestDAPDebugClientJq: jq 1.6 (C): a breakpoint in a header's static
// function (exec_stack.h), a function breakpoint, next/stepIn/stepOut as
// gdb steps, the console's p/x and whatis, the exit code and output; the
// assertion of `["a"] | implode` (SIGABRT) with the asserting frame's
// locals under abort.
func TestDAPDebugClientJq(t *testing.T) {
	node, modules := dcClient(t)
	root := buildDebianSource(t, "jq", "jq-*", buildJq)
	srcs, _ := filepath.Glob(filepath.Join(root, "jq-*"))
	if len(srcs) != 1 {
		t.Fatalf("jq's source directory: %v", srcs)
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "jq"), filepath.Join(dir, "jq")); err != nil {
		t.Fatal(err)
	}
	runNodeScenario(t, node, modules, "trial4.js", dir, []string{"--mode", "jq", "--dir", dir, "--src", srcs[0]}, []string{testprog.Sonde(t), "dap"})
}

// TestDAPDebugClientJsoncpp: jsoncpp 1.9.5's test runner (C++): a
// breakpoint whose condition compares a std::string with a literal (name
// == "nested": an error before expr knew libstdc++'s strings), a
// std::vector<std::string> subscripted in a watch, a const std::string &.
func TestDAPDebugClientJsoncpp(t *testing.T) {
	node, modules := dcClient(t)
	root := buildDebianSource(t, "libjsoncpp", "jsoncpp-*", func(t *testing.T, src, out string) {
		files, _ := filepath.Glob(filepath.Join(src, "src", "lib_json", "*.cpp"))
		args := []string{"-g", "-O0", "-std=c++17", "-Iinclude", "-o", filepath.Join(out, "jsontest"), "src/jsontestrunner/main.cpp"}
		for _, f := range files {
			args = append(args, strings.TrimPrefix(f, src+"/"))
		}
		debsrcRun(t, src, "g++", args...)
	})
	srcs, _ := filepath.Glob(filepath.Join(root, "jsoncpp-*"))
	if len(srcs) != 1 {
		t.Fatalf("jsoncpp's source directory: %v", srcs)
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "jsontest"), filepath.Join(dir, "jsontest")); err != nil {
		t.Fatal(err)
	}
	runNodeScenario(t, node, modules, "trial4.js", dir, []string{"--mode", "jsoncpp", "--dir", dir, "--src", srcs[0]}, []string{testprog.Sonde(t), "dap"})
}

// buildJq builds jq 1.6 at -O0 from its source src into out without its
// autotools: builtin.inc made from builtin.jq as its Makefile makes it,
// a version.h, the configure results as -D flags (no oniguruma: no
// regular expressions).
func buildJq(t *testing.T, src, out string) {
	jqDef, err := os.ReadFile(filepath.Join(src, "src", "builtin.jq"))
	if err != nil {
		t.Fatal(err)
	}
	var inc strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(string(jqDef), "\n"), "\n") {
		l = strings.ReplaceAll(strings.ReplaceAll(l, `\`, `\\`), `"`, `\"`)
		inc.WriteString(`"` + l + `\n"` + "\n")
	}
	if err := os.WriteFile(filepath.Join(src, "src", "builtin.inc"), []byte(inc.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "src", "version.h"), []byte("#define JQ_VERSION \"1.6\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(src, "src", "*.c"))
	args := []string{"-g", "-O0", "-I.", "-D_GNU_SOURCE", "-DIEEE_8087", "-DHAVE_ISATTY", "-DHAVE_MEMMEM", "-DHAVE_MKSTEMP",
		"-DHAVE_GMTIME_R", "-DHAVE_TIMEGM", "-DHAVE_STRPTIME", "-DHAVE_LOCALTIME_R", "-DHAVE_GETTIMEOFDAY", "-DHAVE_SETLOCALE",
		"-DHAVE_PTHREAD_KEY_CREATE", "-DHAVE_PTHREAD_ONCE", "-DHAVE_ATEXIT", "-o", filepath.Join(out, "jq")}
	for _, f := range files {
		if filepath.Base(f) != "inject_errors.c" {
			args = append(args, strings.TrimPrefix(f, src+"/"))
		}
	}
	debsrcRun(t, src, "gcc", append(args, "-lm", "-lpthread")...)
}
