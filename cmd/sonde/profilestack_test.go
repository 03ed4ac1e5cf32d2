package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestProfileStackSize samples perf_deep, whose hot loop runs ~25 KiB below
// main's frame: with the default 8 KiB stack copy (perf record's) the walks
// stop inside the recursion and sonde profile says how many did and what
// to raise; with --stack-size 49152 they reach main and _start.
func TestProfileStackSize(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"perf_deep.c"}, Flags: []string{"-O2"}})
	dir := t.TempDir()
	short := filepath.Join(dir, "short.folded")
	_, errOut, code := runCLI(t, "profile", "folded", "-F", "1000", "-o", short, "--", prog, "400")
	if code != 0 {
		if strings.Contains(errOut, "perf_event_open") {
			t.Skipf("SKIP (machine): %s", strings.TrimSpace(errOut))
		}
		t.Fatalf("profile: exit %d: %s", code, errOut)
	}
	out := readFile(t, short)
	if !strings.Contains(errOut, "with stacks deeper than the 8192 bytes copied (--stack-size)") || !strings.Contains(out, "perf_deep;deep;deep;") {
		t.Errorf("8 KiB copies: stderr %q\n%s", errOut, out)
	}
	// (A sample while the recursion descends may reach main; one in spin,
	// under 24 frames of 1 KiB, may not.)
	if stackWith(out, ";main;", ";spin") {
		t.Errorf("an 8 KiB copy reached main from spin, past 24 frames of 1 KiB:\n%s", out)
	}
	long := filepath.Join(dir, "long.folded")
	_, errOut, code = runCLI(t, "profile", "folded", "-F", "1000", "--stack-size", "49152", "-o", long, "--", prog, "400")
	if code != 0 {
		t.Fatalf("profile --stack-size 49152: exit %d: %s", code, errOut)
	}
	out = readFile(t, long)
	if strings.Contains(errOut, "deeper than") || !strings.Contains(out, "perf_deep;_start;") || !stackWith(out, ";main;deep;deep;", ";spin") {
		t.Errorf("48 KiB copies: stderr %q\n%s", errOut, out)
	}
	for _, bad := range []string{"0", "100", "65536"} {
		if _, errOut, code := runCLI(t, "profile", "folded", "--stack-size", bad, "--", prog, "1"); code != 2 || !strings.Contains(errOut, "--stack-size") {
			t.Errorf("--stack-size %s: exit %d, %q", bad, code, errOut)
		}
	}
}

// stackWith reports whether a line of folded output holds both a and b.
func stackWith(folded, a, b string) bool {
	for _, line := range strings.Split(folded, "\n") {
		if strings.Contains(line, a) && strings.Contains(line, b) {
			return true
		}
	}
	return false
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
