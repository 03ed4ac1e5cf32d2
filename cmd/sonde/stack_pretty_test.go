package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/variables/vartest"
)

// TestStackFullPrettyMatchesGdb compares `sonde stack --full` (library
// types shown as gdb's pretty-printers show them, the default) with gdb's
// `thread apply all bt full` with libstdc++'s printers auto-loaded, as gdb
// runs on Debian, on pp_cxx's containers from a core. One line is left
// out: a std::list iterator, which gdb's printer names by parsing the
// iterator's type name (GCC gives it no template parameter), which sonde
// does not.
func TestStackFullPrettyMatchesGdb(t *testing.T) {
	gdbtest.Need(t)
	exe := testprog.Build(t, testprog.Spec{Sources: []string{"pp_cxx.cc"}, Flags: []string{"-O0", "-std=c++17"}, Name: "pp_cxx"})
	stop := vartest.GDBStop(t, exe, "stop_here", map[int][]string{1: {"m"}})
	if v := stop.Results[1]["m"].Value; v == "" || v[0] == '{' {
		t.Skipf("gdb has no libstdc++ printers (m = %q)", v)
	}
	got, errOut, code := runCLI(t, "stack", "--full", "--core", stop.Core, "--exe", exe)
	if code != 0 {
		t.Fatalf("sonde stack: exit %d: %s", code, errOut)
	}
	out := gdbtest.Batch(t, "-ex", "set pagination off", "-ex", "thread apply all bt full", exe, stop.Core)
	lines := func(s string, from string) []string {
		var keep []string
		in := false
		for _, l := range strings.Split(s, "\n") {
			in = in || strings.HasPrefix(l, from)
			if in && !strings.HasPrefix(strings.TrimSpace(l), "l_it = ") && l != "" {
				keep = append(keep, l)
			}
		}
		return keep
	}
	g := lines(regexp.MustCompile(`(?m)^Fault address: .*\n`).ReplaceAllString(got, ""), "Thread ")
	w := lines(out, "Thread ")
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("sonde stack --full:\n%s\ngdb bt full:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	if !strings.Contains(got, "m = std::map with 3 elements = {[1] = \"one\"") {
		t.Errorf("no std::map summary in:\n%s", got)
	}
	raw, _, _ := runCLI(t, "stack", "--full", "--raw", "--core", stop.Core, "--exe", exe)
	if !strings.Contains(raw, "m = {_M_t = ") {
		t.Errorf("--raw: no std::map members in:\n%s", raw)
	}
}

// TestStackFullRustMatchesGdb compares `sonde stack --full --raw` on a Rust
// program (rs_syntax: structs, tuples, enums, slices, &str, chars) with
// gdb's `bt full`, which prints a Rust frame's values in Rust's syntax:
// the frames up to the program's main (gdb stops there; the runtime's
// frames below it are not compared).
func TestStackFullRustMatchesGdb(t *testing.T) {
	gdbtest.Need(t)
	exe := testprog.BuildRust(t, "rs_syntax.rs", "rs_syntax", "-C", "opt-level=0")
	stop := vartest.GDBStop(t, exe, "rs_syntax::stop_here", map[int][]string{1: {"p"}})
	// --raw: plain gdb loads no Rust printers (rust-gdb does).
	got, errOut, code := runCLI(t, "stack", "--full", "--raw", "--core", stop.Core, "--exe", exe)
	if code != 0 {
		t.Fatalf("sonde stack: exit %d: %s", code, errOut)
	}
	out := gdbtest.Batch(t, "-ex", "set pagination off", "-ex", "thread apply all bt full", exe, stop.Core)
	upToMain := func(s string) string {
		var keep []string
		in := false
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "#2 ") {
				break
			}
			in = in || strings.HasPrefix(l, "Thread ")
			if in {
				keep = append(keep, l)
			}
		}
		return strings.TrimSpace(strings.Join(keep, "\n"))
	}
	g, w := upToMain(got), upToMain(out)
	if g != w || !strings.Contains(w, "p = rs_syntax::Point {x: 1, y: 2}") {
		t.Errorf("sonde stack --full:\n%s\ngdb bt full:\n%s", g, w)
	}
}
