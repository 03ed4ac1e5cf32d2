package testprog

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// MappedText returns the bytes of every executable mapping of path in
// process pid, read from /proc/PID/mem, and the same ranges read from the
// file: equal when no breakpoint or probe patch is left in the code (the
// target is sacred: detach and Ctrl-C must remove every one).
func MappedText(t testing.TB, pid int, path string) (mem, file []byte) {
	t.Helper()
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, line := range strings.Split(string(maps), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 6 || fs[5] != path || !strings.Contains(fs[1], "x") {
			continue
		}
		var lo, hi, off uint64
		fmt.Sscanf(fs[0], "%x-%x", &lo, &hi)
		fmt.Sscanf(fs[2], "%x", &off)
		a, b := make([]byte, hi-lo), make([]byte, hi-lo)
		if _, err := m.ReadAt(a, int64(lo)); err != nil {
			t.Fatal(err)
		}
		n, _ := f.ReadAt(b, int64(off))
		mem, file = append(mem, a[:n]...), append(file, b[:n]...)
	}
	if len(mem) == 0 {
		t.Fatalf("no text of %s mapped in %d", path, pid)
	}
	return mem, file
}
