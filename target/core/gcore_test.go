package core

import (
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sondedbg/sonde/target"
)

// TestGcore checks a core written by gdb's gcore of a live, stopped process
// against what gdb and /proc showed of it at the same moment: the registers
// gdb printed before dumping, the memory map, and 1,000 sampled addresses.
func TestGcore(t *testing.T) {
	requireGDB(t)
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil && strings.TrimSpace(string(b)) >= "2" && os.Geteuid() != 0 {
		t.Skipf("Yama ptrace_scope %s lets only root attach gdb", strings.TrimSpace(string(b)))
	}
	p := startTarget(t, buildTarget(t), 0)
	maps := readMaps(t, p.pid)
	samples := sampleMemory(t, p.pid, maps, p.exe, 1000, rand.New(rand.NewSource(7)))
	corePath := filepath.Join(t.TempDir(), "gcore")
	live := gdbRegisters(t, "-p", itoa(p.pid), "-ex", "gcore "+corePath)

	_, c := openCore(t, corePath, Options{})
	checkThreads(t, c, p)
	checkRegisters(t, c, p, live)
	checkMap(t, c.Process(), maps, false)
	if missing := checkMemory(t, c.Process(), samples); len(missing) != 0 {
		t.Errorf("unavailable samples: %v", missing)
	}
	checkAgainstGDB(t, c.Process(), p.exe, corePath, samples[:200])
	// gdb writes each thread's NT_SIGINFO: the SIGSTOP of its attach.
	for _, th := range c.Process().Children() {
		_, r, _ := th.State()
		if r.Kind != target.ReasonUser || r.Signal != target.Signal(syscall.SIGSTOP) {
			t.Errorf("%s: gdb stopped it, yet the reason is %v %v", th, r.Kind, r.Signal.Name())
		}
	}
	for _, pr := range c.Problems() {
		t.Logf("problem: %v", pr)
	}
	if exe := findMapped(c, p.exe); exe == nil || exe.Found != p.exe {
		t.Errorf("executable: %+v", exe)
	}
	testGcoreTruncated(t, c, corePath, samples)
}

// testGcoreTruncated cuts a gcore. gdb writes its notes after the memory, so
// a cut inside the notes keeps the memory and the threads before the cut, and
// a cut before them leaves no process (an error that says so).
func testGcoreTruncated(t *testing.T, full *Core, corePath string, samples []sample) {
	data, err := os.ReadFile(corePath)
	if err != nil {
		t.Fatal(err)
	}
	var notes Segment
	for _, s := range full.Segments() {
		if s.Type == ptNote {
			notes = s
		}
	}
	// Cut in the middle of the last note (gdb writes the section headers
	// after the notes).
	path := filepath.Join(t.TempDir(), "core")
	os.WriteFile(path, data[:notes.Offset+notes.FileSize-300], 0o600)
	_, c := openCore(t, path, Options{})
	if got, want := len(c.Threads()), len(full.Threads()); got != want {
		t.Errorf("%d threads from a core cut in its last note, want %d", got, want)
	}
	kinds := map[ProblemKind]int{}
	for _, p := range c.Problems() {
		kinds[p.Kind]++
	}
	if kinds[ProblemTruncated] == 0 || kinds[ProblemBadNote] == 0 {
		t.Errorf("problems %v", c.Problems())
	}
	if missing := checkMemory(t, c.Process(), samples); len(missing) != 0 {
		t.Errorf("memory lost to a cut in the notes: %v", missing)
	}
	// Cut before the notes.
	os.WriteFile(path, data[:notes.Offset-1], 0o600)
	_, err = Open(path, Options{})
	var ne *NoteError
	if !errors.As(err, &ne) || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("a gcore without its notes: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
