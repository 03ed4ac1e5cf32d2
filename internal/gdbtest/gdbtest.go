// Package gdbtest runs gdb in batch mode for the tests that compare sonde
// with it, and parses what gdb prints. gdb is the oracle of some fifteen
// packages' tests; each had grown its own copy of the same steps (skip when
// gdb is missing, `gdb -nx -batch`, fail with gdb's output when it fails,
// write a Python script to a temporary file, read gdb's frames through its
// Python API, ask `info symbol` for a list of addresses). It is a package of
// its own, not part of internal/testprog, because it is about reading
// another tool's answers, not about building and running the test programs.
package gdbtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Need skips t, saying why, when gdb is not installed.
func Need(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Skip("SKIP: gdb is not installed (scripts/setup installs it): it is the oracle of this test")
	}
}

// Run runs `gdb -nx -batch args...` and returns its combined output: for a
// caller that handles gdb's failure its own way (skips, or tolerates it).
func Run(args ...string) ([]byte, error) {
	return exec.Command("gdb", append([]string{"-nx", "-batch"}, args...)...).CombinedOutput()
}

// Batch runs `gdb -nx -batch args...` and returns its combined output. It
// skips t when gdb is not installed and fails it, showing gdb's output,
// when gdb fails.
func Batch(t testing.TB, args ...string) string {
	t.Helper()
	Need(t)
	out, err := Run(args...)
	if err != nil {
		t.Fatalf("gdb %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// Ex turns commands into gdb's arguments: "-ex", cmd for each.
func Ex(cmds ...string) []string {
	args := make([]string, 0, 2*len(cmds))
	for _, c := range cmds {
		args = append(args, "-ex", c)
	}
	return args
}

// Script writes text (gdb commands, or Python to `source`) to a file named
// name in a new temporary directory of t and returns its path.
func Script(t testing.TB, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Frame types as gdb's Python API numbers them (gdb.NORMAL_FRAME, ...).
const (
	NormalFrame   = 0
	InlineFrame   = 2
	TailcallFrame = 3
	SigtrampFrame = 4
)

// Frame is one frame of a thread's backtrace as gdb's Python API reports
// it.
type Frame struct {
	Type int    // NormalFrame, InlineFrame, TailcallFrame, SigtrampFrame, ...
	PC   uint64 // frame.pc()
	Name string // frame.name(): the name bt prints; "" when gdb has none
	File string // the symtab's file name, as gdb prints it; "" without one
	Line int    // the line of the frame's sal; 0 without one
}

// Thread is one thread's backtrace.
type Thread struct {
	TID    int     // the thread's LWP id
	Frames []Frame // innermost first
	Stop   string  // why gdb stopped unwinding the outermost frame
}

// BacktraceScript is a Python script for gdb that prints the backtrace of
// every thread of every inferior through gdb's Python API, for
// ParseBacktraces: run it with `-x` (or `source`) once the program is
// stopped.
const BacktraceScript = `
import gdb
for inf in gdb.inferiors():
    for th in sorted(inf.threads(), key=lambda t: t.num):
        th.switch()
        print("THREAD|%d" % th.ptid[1])
        f = gdb.newest_frame()
        last = f
        while f is not None:
            sal = f.find_sal()
            fn = sal.symtab.filename if sal.symtab else ""
            print("FRAME|%d|%#x|%s|%s|%d" % (f.type(), f.pc(), f.name() or "", fn, sal.line))
            last = f
            f = f.older()
        print("STOP|%s" % gdb.frame_stop_reason_string(last.unwind_stop_reason()))
`

// ParseBacktraces reads BacktraceScript's output (gdb's other output
// around it is passed over): the threads in gdb's order.
func ParseBacktraces(out string) []Thread {
	var threads []Thread
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, "|")
		switch {
		case len(f) == 2 && f[0] == "THREAD":
			tid, _ := strconv.Atoi(f[1])
			threads = append(threads, Thread{TID: tid})
		case len(f) == 6 && f[0] == "FRAME" && len(threads) > 0:
			typ, _ := strconv.Atoi(f[1])
			pc, _ := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 64)
			line, _ := strconv.Atoi(f[5])
			th := &threads[len(threads)-1]
			th.Frames = append(th.Frames, Frame{Type: typ, PC: pc, Name: f[3], File: f[4], Line: line})
		case len(f) == 2 && f[0] == "STOP" && len(threads) > 0:
			threads[len(threads)-1].Stop = f[1]
		}
	}
	return threads
}

// Backtraces runs gdb on target (`-p PID`, `EXE CORE`, or `--args PROG
// ARGS...`) with cmds (which stop the program, when it is to be run), then
// BacktraceScript, and returns every thread's backtrace, the lowest thread
// id (the main thread's) first. It fails t when gdb fails or shows no
// thread.
func Backtraces(t testing.TB, cmds []string, target ...string) []Thread {
	t.Helper()
	script := Script(t, "bt.py", BacktraceScript)
	args := append(Ex(append([]string{"set pagination off"}, cmds...)...), "-x", script)
	out := Batch(t, append(args, target...)...)
	threads := ParseBacktraces(out)
	if len(threads) == 0 {
		t.Fatalf("gdb printed no backtrace:\n%s", out)
	}
	sort.SliceStable(threads, func(i, j int) bool { return threads[i].TID < threads[j].TID })
	return threads
}

// InfoSymbols asks gdb's `info symbol` about each address of bin (not
// running) and returns gdb's answer for each, in order: "NAME + OFF in
// section S", or "No symbol matches ..." (gdb's warnings passed over).
func InfoSymbols(t testing.TB, bin string, addrs []uint64) []string {
	t.Helper()
	var args []string
	for _, a := range addrs {
		args = append(args, "-ex", fmt.Sprintf("echo @%#x\\n", a), "-ex", fmt.Sprintf("info symbol %#x", a))
	}
	out := Batch(t, append(args, bin)...)
	res := make([]string, len(addrs))
	i := -1
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "@0x") {
			i++
			continue
		}
		if i >= 0 && i < len(addrs) && res[i] == "" && !strings.HasPrefix(line, "warning: ") {
			res[i] = line
		}
	}
	if i != len(addrs)-1 {
		t.Fatalf("gdb answered %d of %d addresses:\n%s", i+1, len(addrs), out)
	}
	return res
}
