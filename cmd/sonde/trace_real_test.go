package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// Tests from the first real-program trial of sonde trace
// (bench/trace/REAL-PROGRAMS.md): each reproduces, with a program the test
// builds, the trait of a Debian program that made sonde trace fail.

// TestTraceStripped: Debian's executables are stripped (sqlite3, redis-server,
// python3): no main symbol. A probe in a library is planted once the
// program reached its entry point (the libraries loaded), not refused with
// "function main: no code found"; every call is counted.
func TestTraceStripped(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := testprog.Build(t, testprog.Spec{Sources: []string{"pr_count.c"}, Flags: []string{"-O2", "-s"}, Name: "pr_count_stripped"})
	if out, _ := exec.Command("nm", path).CombinedOutput(); len(out) > 0 && !strings.Contains(string(out), "no symbols") {
		t.Fatalf("%s is not stripped: nm says %.200s", path, out)
	}
	const n = 500
	cmd := exec.Command(sonde, "trace", "--json", "--probe", "snprintf", "--", path, fmt.Sprint(n), "lib")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	prog, rep := splitTraceOutput(t, out)
	if want := untracedOutput(t, path, fmt.Sprint(n), "lib"); prog != want {
		t.Errorf("program output %q, untraced %q", prog, want)
	}
	if r := rowOf(t, rep, "snprintf"); r.Hits != n {
		t.Errorf("snprintf: %+v, want %d hits", r, n)
	}
}
