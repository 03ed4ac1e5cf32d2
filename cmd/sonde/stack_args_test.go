package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// noPrinters turns off gdb's auto-loaded Python scripts (libstdc++'s pretty
// printers): sonde prints C++ library types as their members, as gdb does
// without them.
var noPrinters = []string{"-iex", "set auto-load python-scripts off"}

// TestStackArgsMatchGdbBtFull compares `sonde stack --full` with gdb's
// `thread apply all bt full` line by line — argument lists with entry
// values, locals with structs, arrays, strings, repeats, bit fields, nested
// blocks in gdb's order, static locals — on C and C++ programs at -O0 and
// -O2, live and from a core.
func TestStackArgsMatchGdbBtFull(t *testing.T) {
	gdbtest.Need(t)
	for _, c := range []struct{ src, opt string }{
		{"stk_args.c", "-O0"}, {"stk_args.c", "-O2"},
		{"stk_args_cxx.cc", "-O0"}, {"stk_args_cxx.cc", "-O2"},
	} {
		t.Run(c.src+c.opt, func(t *testing.T) {
			path := testprog.Build(t, testprog.Spec{Sources: []string{c.src}, Flags: []string{c.opt}})
			cmd := startStackProgram(t, path)
			pid := strconv.Itoa(cmd.Process.Pid)
			compareTextCmd(t, []string{"stack", "--full", "--raw", pid}, append(append([]string{}, noPrinters...), "-p", pid), "thread apply all bt full")
			compareText(t, []string{"stack", pid}, append(append([]string{}, noPrinters...), "-p", pid))
			corePath := filepath.Join(t.TempDir(), "core")
			if out, err := exec.Command("gcore", "-o", corePath, pid).CombinedOutput(); err != nil {
				t.Fatalf("gcore: %v\n%s", err, out)
			}
			corePath += "." + pid
			compareTextCmd(t, []string{"stack", "--full", "--raw", "--core", corePath, "--exe", path},
				append(append([]string{}, noPrinters...), path, corePath), "thread apply all bt full")
		})
	}
}

// TestStackArgsJSON checks the "args" and "locals" arrays of `sonde stack
// --json --full`: name, C type and gdb's text of each value, entry values.
func TestStackArgsJSON(t *testing.T) {
	vars, pid := stackVars(t, "-O0")
	want := []struct{ fn, name, typ, value string }{
		{"kinds", "c", "char", "65 'A'"},
		{"kinds", "b", "_Bool", "true"},
		{"kinds", "f", "float", "3.1400001"},
		{"kinds", "col", "enum color", "GREEN"},
		{"kinds", "fl", "enum flags", "(F_A | F_C)"},
		{"kinds", "pt", "struct point", "..."},
		{"kinds", "nul", "const char *", "0x0"},
		{"kinds", "zeros", "int [20]", "{0 <repeats 20 times>}"},
		{"kinds", "buf", "char [32]", `"hi", '\000' <repeats 29 times>`},
		{"down", "n", "int", "0"},
	}
	for _, w := range want {
		v, ok := vars[w.fn][w.name]
		if !ok {
			t.Errorf("%s: no variable %s in %v", w.fn, w.name, vars[w.fn])
			continue
		}
		if v.Type != w.typ || v.Value != w.value {
			t.Errorf("%s: %s is %q of type %q, want %q of type %q", w.fn, w.name, v.Value, v.Type, w.value, w.typ)
		}
	}
	// Without --full there are no locals, and arguments can be left out.
	out, _, _ := runCLI(t, "stack", "--json", "--no-args", pid)
	var bare map[string]any
	if err := json.Unmarshal([]byte(out), &bare); err != nil {
		t.Fatal(err)
	}
	f0 := bare["threads"].([]any)[0].(map[string]any)["frames"].([]any)[0].(map[string]any)
	if _, ok := f0["locals"]; ok {
		t.Errorf("locals without --full: %v", f0)
	}
	// At -O2 the recursion's n is known from its callers' call sites only:
	// n=n@entry=0 (the chain goes through every caller up to main).
	vars, _ = stackVars(t, "-O2")
	if v := vars["down"]["n"]; v.Value != "0" || v.EntryValue == nil || *v.EntryValue != "0" {
		t.Errorf("-O2: down's n is not n=n@entry=0: %+v", v)
	}
}

// stackVars runs testdata/stk_args.c built with opt and returns the
// arguments and locals of the innermost frame of each function, and the pid.
func stackVars(t *testing.T, opt string) (map[string]map[string]stackVar, string) {
	path := testprog.Build(t, testprog.Spec{Sources: []string{"stk_args.c"}, Flags: []string{opt}})
	cmd := startStackProgram(t, path)
	pid := strconv.Itoa(cmd.Process.Pid)
	out, errOut, code := runCLI(t, "stack", "--json", "--full", pid)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r stackReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	vars := map[string]map[string]stackVar{} // function -> name -> var
	for _, f := range r.Threads[0].Frames {
		if f.Function == nil {
			continue
		}
		if f.Args == nil || f.Locals == nil {
			t.Errorf("frame %s: args %v locals %v: want arrays", *f.Function, f.Args, f.Locals)
			continue
		}
		m := map[string]stackVar{}
		for _, v := range append(append([]stackVar{}, f.Args...), *f.Locals...) {
			m[v.Name] = v
		}
		if vars[*f.Function] == nil {
			vars[*f.Function] = m
		}
	}
	return vars, pid
}

// TestStackArgsDeepRecursionMatchesGdb: a 300-deep recursion passing n-1
// down has each frame's n only as an entry value of its caller's, a chain
// down to main; gdb follows 256 levels and prints "Loop detected (257)"
// beyond, and so must sonde (which follows the chain once, not per frame).
func TestStackArgsDeepRecursionMatchesGdb(t *testing.T) {
	gdbtest.Need(t)
	path := testprog.Build(t, testprog.Spec{Sources: []string{"stk_threads.c"}, Flags: []string{"-O2", "-fomit-frame-pointer"}, Name: "stk-threads-O2-nofp"})
	cmd := startStackProgram(t, path, "deep", "300")
	pid := strconv.Itoa(cmd.Process.Pid)
	out, _, _ := runCLI(t, "stack", pid)
	if !strings.Contains(out, "Loop detected (257)") || !strings.Contains(out, "deep (n=n@entry=298)") {
		t.Errorf("no entry-value chain limit, or no entry values:\n%.2000s", out)
	}
	compareText(t, []string{"stack", pid}, []string{"-p", pid})
}
