package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestDAPDebugClientReal runs testdata/dapclient/realprog.js: Microsoft's
// DebugClient driving `sonde dap` as a demanding editor user would, through
// programs the other scenarios do not know (testdata/dapreal): a multi-file
// C++ program with a shared library (breakpoints in a template in a header,
// hit conditions, logpoints, a function breakpoint on a virtual member,
// stepping into the library through the PLT and out, stepInTargets, C++
// throw and catch stops, data and instruction breakpoints, char arrays, hex,
// setVariable, setExpression, the repl's bt, info registers and x/8x,
// completions of members, readMemory and writeMemory, disassemble around the
// pc, modules, loadedSources); a multi-threaded C program (a condition on a
// pointer's members, threads started and exited, pause, terminate, a worker's
// SIGSEGV, disconnect {terminateDebuggee: false} from a launch); a Rust
// program (String, Option, a method, a closure, a spawned thread, a panic
// caught by a function breakpoint on rust_panic); a second Rust program
// (ledger.rs: a generic impl's method and a trait impl's method by their
// paths, a tuple struct's self.0, an enum's tuple variant, recursion, a
// logpoint after setVariable, pause of spinning threads); faults.cc (a throw
// inside libstdc++ by the cpp_throw filter, exceptionInfo naming
// std::out_of_range, a null store's SIGSEGV with its address, restart back
// to the throw); cores of the C++ and the
// threaded program; python3.11-dbg (Debian's) attached to while it sleeps
// and left running.
func TestDAPDebugClientReal(t *testing.T) {
	node, modules := dcClient(t)
	sonde := testprog.Sonde(t)
	dir := buildRealPrograms(t)
	// Debug registers that do not trap (a VM's) cannot stop at a data
	// breakpoint: the scenario sets one and does not run into it.
	hw := false
	t.Run("hwdebug", func(t *testing.T) {
		testprog.RequireHardwareDebug(t) // skips when they do not
		hw = true
	})
	for _, mode := range []string{"cpp", "threads", "rust", "cores", "sleep", "ledger", "faults"} {
		t.Run(mode, func(t *testing.T) {
			if (mode == "rust" || mode == "ledger") && !dcFileExists(filepath.Join(dir, "shop")) {
				t.Skip("SKIP: rustc is not installed (scripts/setup installs it): the Rust program is not built")
			}
			flags := append([]string(nil), realKnown[mode]...)
			if !hw {
				flags = append(flags, "--no-hwdebug")
			}
			runRealScenario(t, node, modules, mode, dir, flags, sonde, "dap")
		})
	}
}

// realKnown lists sonde dap's known bugs the real-program scenarios meet, by
// scenario (their checks print KNOWN, or FIXED when the flag can go).
// None today (rust-enum, a Rust enum shown as "{<No data fields>}", was
// fixed by reading DW_TAG_variant_part in package variables).
var realKnown = map[string][]string{}

// runRealScenario runs realprog.js in mode against the adapter command
// line; a failed check fails the test with the scenario's whole output.
func runRealScenario(t *testing.T, node, modules, mode, dir string, flags []string, adapter ...string) {
	t.Helper()
	args := []string{"--mode", mode, "--dir", dir, "--src", testprog.Source("dapreal")}
	runNodeScenario(t, node, modules, "realprog.js", dir, append(args, flags...), adapter)
}

// buildRealPrograms builds testdata/dapreal at -O0 into a directory:
// libdapreal_math.so, inventory (C++, linked to it with an rpath), workers
// (C, threads), faults (C++: a throw and a SIGSEGV) and, when rustc is installed, shop (Rust).
func buildRealPrograms(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := testprog.Source("dapreal")
	run := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run("gcc", "-g", "-O0", "-fPIC", "-shared", "-o", filepath.Join(dir, "libdapreal_math.so"), "mathlib.c")
	run("g++", "-g", "-O0", "-std=c++17", "-o", filepath.Join(dir, "inventory"), "inventory.cc", "shapes.cc",
		"-L"+dir, "-ldapreal_math", "-Wl,-rpath,"+dir)
	run("gcc", "-g", "-O0", "-pthread", "-o", filepath.Join(dir, "workers"), "workers.c")
	run("g++", "-g", "-O0", "-o", filepath.Join(dir, "faults"), "faults.cc")
	if testprog.Rustc() != "" {
		// Built once and shared (testprog's cache); the scenario wants
		// them in dir, next to the others.
		for _, name := range []string{"shop", "ledger"} {
			copyFile(t, testprog.BuildRust(t, "dapreal/"+name+".rs", name, "-C", "opt-level=0"), filepath.Join(dir, name))
		}
	}
	return dir
}
