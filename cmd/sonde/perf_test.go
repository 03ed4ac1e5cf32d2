package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestPerfCLI drives sonde perf as a user would: each output from a file,
// folded from a pipe-mode recording on standard input, and its errors.
func TestPerfCLI(t *testing.T) {
	testprog.RequirePerf(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2"}})
	dir := t.TempDir()
	data := filepath.Join(dir, "perf.data")
	testprog.PerfRecord(t, []string{"-F", "2000", "--call-graph", "dwarf", "-o", data}, prog, "200")
	for _, mode := range []string{"folded", "script", "report"} {
		out, errOut, code := runCLI(t, "perf", mode, "-i", data)
		if code != 0 || !strings.Contains(out, "leaf") || !strings.Contains(errOut, "samples") {
			t.Errorf("perf %s: exit %d, stderr %q, stdout %.300q", mode, code, errOut, out)
		}
	}
	pb := filepath.Join(dir, "out.pb.gz")
	if _, errOut, code := runCLI(t, "perf", "pprof", "-i", data, "-o", pb); code != 0 {
		t.Fatalf("perf pprof: exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(pb); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("pprof output is not gzipped: %v", err)
	}
	// A pipe-mode recording on standard input.
	pipeData := filepath.Join(dir, "pipe.data")
	f, err := os.Create(pipeData)
	if err != nil {
		t.Fatal(err)
	}
	rec := exec.Command("perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "--call-graph", "dwarf", "-o", "-", "--", prog, "200")
	rec.Stdout = f
	if err := rec.Run(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	in, _ := os.Open(pipeData)
	defer in.Close()
	cmd := exec.Command(sondeCLI(t), "perf", "folded", "-i", "-")
	cmd.Stdin = in
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), ";main;middle;leaf") {
		t.Errorf("folded from a pipe: %v\n%.300s", err, out)
	}
	// Errors: a missing file says how to make one; a bad mode is a usage error.
	if _, errOut, code := runCLI(t, "perf", "folded", "-i", filepath.Join(dir, "none")); code != 1 || !strings.Contains(errOut, "perf record") {
		t.Errorf("missing file: exit %d, %q", code, errOut)
	}
	if _, _, code := runCLI(t, "perf", "flame", "-i", data); code != 2 {
		t.Errorf("unknown output: exit %d, want 2", code)
	}
	if _, errOut, code := runCLI(t, "perf", "report", "-i", prog); code != 1 || !strings.Contains(errOut, "not a perf.data file") {
		t.Errorf("an ELF file as the recording: exit %d, %q", code, errOut)
	}
}

// TestProfileLaunchAndAttach samples perf_spin by itself (no perf binary
// involved): launched, from its exec to its exit, and attached with -p for a
// duration, after which the program runs on.
func TestProfileLaunchAndAttach(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_spin.c"}, Flags: []string{"-O2"}})
	out, errOut, code := runCLI(t, "profile", "folded", "-F", "2000", "--", prog, "400")
	if code != 0 {
		if strings.Contains(errOut, "perf_event_open") {
			t.Skipf("SKIP (machine): %s", strings.TrimSpace(errOut))
		}
		t.Fatalf("profile: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "perf_spin;_start;") || !strings.Contains(out, ";main;middle;leaf;mix ") || !strings.Contains(errOut, "samples") {
		t.Errorf("launched profile:\n%s\nstderr: %s", out, errOut)
	}
	cmd := exec.Command(prog, "5000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	out, errOut, code = runCLI(t, "profile", "report", "-p", strconv.Itoa(cmd.Process.Pid), "--duration", "400ms")
	if code != 0 || !strings.Contains(out, " leaf\n") {
		t.Fatalf("profile -p: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the sampled process is gone after sonde profile -p: %v", err)
	}
	if _, _, code := runCLI(t, "profile", "folded"); code != 2 {
		t.Errorf("profile without a target: exit %d, want 2", code)
	}
}
