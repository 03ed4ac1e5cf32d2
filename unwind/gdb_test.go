package unwind

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

// gdbFrame is one frame of gdb's backtrace as its Python API reports it.
type gdbFrame struct {
	typ  int // gdb.NORMAL_FRAME 0, INLINE_FRAME 2, TAILCALL_FRAME 3, SIGTRAMP_FRAME 4
	pc   uint64
	name string
}

const (
	gdbNormal   = 0
	gdbInline   = 2
	gdbTailcall = 3
	gdbSigtramp = 4
)

const gdbScript = `
import gdb
for inf in gdb.inferiors():
    for th in inf.threads():
        th.switch()
        print("THREAD %d" % th.ptid[1])
        f = gdb.newest_frame()
        last = f
        while f is not None:
            print("FRAME %d %#x %s" % (f.type(), f.pc(), f.name()))
            last = f
            f = f.older()
        print("STOP %s" % gdb.frame_stop_reason_string(last.unwind_stop_reason()))
`

// gdbBacktracesWith runs path under gdb to the same SIGTRAP stop, with extra gdb
// commands before `run`, and returns the backtrace of every thread, the
// stopping thread (the main thread) first.
func gdbBacktracesWith(t testing.TB, cmds []string, path string, args ...string) [][]gdbFrame {
	t.Helper()
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Skip("gdb not installed")
	}
	script := filepath.Join(t.TempDir(), "bt.py")
	if err := os.WriteFile(script, []byte(gdbScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cmdArgs := []string{"-nx", "-batch", "-ex", "set pagination off", "-ex", "set backtrace past-main on", "-ex", "set backtrace past-entry on",
		"-ex", "handle SIGUSR1 nostop noprint pass"}
	for _, c := range cmds {
		cmdArgs = append(cmdArgs, "-ex", c)
	}
	cmdArgs = append(cmdArgs, "-ex", "run", "-x", script, "--args", path)
	out, err := exec.Command("gdb", append(cmdArgs, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("gdb: %v\n%s", err, out)
	}
	var threads [][]gdbFrame
	var tids []int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "THREAD":
			tid, _ := strconv.Atoi(f[1])
			tids = append(tids, tid)
			threads = append(threads, nil)
		case len(f) >= 3 && f[0] == "FRAME" && len(threads) > 0:
			typ, _ := strconv.Atoi(f[1])
			pc, _ := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 64)
			name := ""
			if len(f) > 3 && f[3] != "None" {
				name = f[3]
			}
			threads[len(threads)-1] = append(threads[len(threads)-1], gdbFrame{typ, pc, name})
		}
	}
	if len(threads) == 0 {
		t.Fatalf("gdb printed no backtrace:\n%s", out)
	}
	// The main thread (lowest tid) first, like liveTarget.tids.
	idx := make([]int, len(tids))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return tids[idx[a]] < tids[idx[b]] })
	sorted := make([][]gdbFrame, len(idx))
	for i, j := range idx {
		sorted[i] = threads[j]
	}
	return sorted
}

// physical drops gdb's inline and tail-call frames: the unwinder's frames are
// the physical ones (inline frames come from the symbol layer).
func physical(fs []gdbFrame) []gdbFrame {
	var out []gdbFrame
	for _, f := range fs {
		if f.typ != gdbInline && f.typ != gdbTailcall {
			out = append(out, f)
		}
	}
	return out
}

// baseName strips GCC clone suffixes (.isra.0, .constprop.0, .part.0, .cold)
// that symbol tables carry and DWARF names do not.
func baseName(s string) string {
	if i := strings.IndexByte(s, '.'); i > 0 {
		return s[:i]
	}
	return s
}

func formatStacks(ours []ourFrame, gdb []gdbFrame) string {
	var b strings.Builder
	n := max(len(ours), len(gdb))
	for i := 0; i < n; i++ {
		var o, g string
		if i < len(ours) {
			o = fmt.Sprintf("%#x %-7s %s", ours[i].pc, ours[i].kind, ours[i].name)
		}
		if i < len(gdb) {
			g = fmt.Sprintf("%#x %s", gdb[i].pc, gdb[i].name)
		}
		fmt.Fprintf(&b, "  #%-3d %-50s | %s\n", i, o, g)
	}
	return b.String()
}

// programFunctions are the functions of testdata/uw_*.c, whose names our
// symbol-table lookup must agree on with gdb.
var programFunctions = map[string]bool{}

func init() {
	for _, n := range []string{"stop_here", "recurse", "compare", "do_qsort", "in_handler", "handler",
		"interrupted", "do_signal", "use_alloca", "realigned", "asm_callback", "uw_asm_call", "sleeper",
		"waiter", "reader", "do_threads", "main", "callee", "do_calls", "die", "ends_in_noreturn",
		"call_null", "Guard::~Guard", "thrower", "tail_target", "do_own_restorer", "call_null_handled"} {
		programFunctions[n] = true
	}
}

// compareWithGDB checks our physical frames against gdb's: same pcs in the same
// order, signal trampolines where gdb has them, and the same function names
// wherever our symbol table knows the function.
func compareWithGDB(t *testing.T, ours []ourFrame, gdb []gdbFrame) {
	t.Helper()
	gdb = physical(gdb)
	ok := len(ours) == len(gdb)
	for i := 0; ok && i < len(ours); i++ {
		o, g := ours[i], gdb[i]
		if o.pc != g.pc || (g.typ == gdbSigtramp) != (o.kind == KindSignal) {
			ok = false
		}
		// libc's aliases (gsignal/raise) differ legitimately; the test
		// program's own functions must carry the same names.
		if programFunctions[g.name] && baseName(o.name) != g.name {
			ok = false
		}
	}
	if !ok {
		t.Errorf("backtrace differs from gdb (ours | gdb):\n%s", formatStacks(ours, gdb))
	}
}
