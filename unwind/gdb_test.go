package unwind

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
)

// gdbFrame is one frame of gdb's backtrace as its Python API reports it.
type gdbFrame = gdbtest.Frame

// gdbBacktracesWith runs path under gdb to the same SIGTRAP stop, with extra gdb
// commands before `run`, and returns the backtrace of every thread, the
// stopping thread (the main thread) first.
func gdbBacktracesWith(t testing.TB, cmds []string, path string, args ...string) [][]gdbFrame {
	t.Helper()
	cmds = append([]string{"set backtrace past-main on", "set backtrace past-entry on",
		"handle SIGUSR1 nostop noprint pass"}, cmds...)
	threads := gdbtest.Backtraces(t, append(cmds, "run"), append([]string{"--args", path}, args...)...)
	// The main thread (lowest tid) first, like liveTarget.tids.
	frames := make([][]gdbFrame, len(threads))
	for i, th := range threads {
		frames[i] = th.Frames
	}
	return frames
}

// physical drops gdb's inline and tail-call frames: the unwinder's frames are
// the physical ones (inline frames come from the symbol layer).
func physical(fs []gdbFrame) []gdbFrame {
	var out []gdbFrame
	for _, f := range fs {
		if f.Type != gdbtest.InlineFrame && f.Type != gdbtest.TailcallFrame {
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
			g = fmt.Sprintf("%#x %s", gdb[i].PC, gdb[i].Name)
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
		if o.pc != g.PC || (g.Type == gdbtest.SigtrampFrame) != (o.kind == KindSignal) {
			ok = false
		}
		// libc's aliases (gsignal/raise) differ legitimately; the test
		// program's own functions must carry the same names.
		if programFunctions[g.Name] && baseName(o.name) != g.Name {
			ok = false
		}
	}
	if !ok {
		t.Errorf("backtrace differs from gdb (ours | gdb):\n%s", formatStacks(ours, gdb))
	}
}
