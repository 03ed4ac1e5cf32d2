package unwind

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/internal/testprog"
)

// liveCase is one program + flags + stop, unwound by us and by gdb.
type liveCase struct {
	name  string
	flags []string
	args  []string
	asm   bool // link testdata/uw_asm.S too
	// stopSig is the signal the program stops with (default SIGTRAP).
	stopSig unix.Signal
	sources []string // instead of uw_main.c
	// gdbWrong marks cases where gdb's backtrace is known to be wrong, so we
	// check our frames by other means (want, a signal frame, the stop).
	gdbWrong   string
	wantSignal bool
	gdbCmds    []string // extra gdb commands before `run`
	// want are function names that must appear, in this order, in the main
	// thread's backtrace (checks the test program really built that stack).
	want []string
}

func buildCase(t *testing.T, c liveCase) string { return buildCaseTB(t, c) }

func buildCaseTB(t testing.TB, c liveCase) string {
	srcs := []string{"uw_main.c"}
	if c.sources != nil {
		return testprog.Build(t, testprog.Spec{Sources: c.sources, Flags: c.flags, Name: "uw_" + c.name})
	}
	flags := c.flags
	if c.asm {
		srcs = append(srcs, "uw_asm.S")
	} else {
		flags = append(append([]string{}, flags...), "-DNO_ASM")
	}
	return testprog.Build(t, testprog.Spec{Sources: srcs, Flags: flags, Name: "uw_main_" + c.name})
}

func checkWant(t *testing.T, ours []ourFrame, want []string) {
	t.Helper()
	i := 0
	for _, f := range ours {
		if i < len(want) && baseName(f.name) == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("backtrace lacks %q (in order %q):\n%s", want[i], want, formatStacks(ours, nil))
	}
}

func runLiveCase(t *testing.T, c liveCase) {
	bin := buildCase(t, c)
	sig := c.stopSig
	if sig == 0 {
		sig = unix.SIGTRAP
	}
	lt := startLiveSig(t, sig, bin, c.args...)
	gdb := gdbBacktracesWith(t, c.gdbCmds, bin, c.args...)
	if len(gdb) != len(lt.tids) {
		t.Fatalf("gdb saw %d threads, we %d", len(gdb), len(lt.tids))
	}
	for i, tid := range lt.tids {
		ours, tr := lt.walk(tid)
		if tr.Stop != StopOutermost {
			t.Errorf("thread %d: stop reason %v (%v), want outermost", tid, tr.Stop, tr.Err)
		}
		if c.gdbWrong == "" {
			compareWithGDB(t, ours, gdb[i])
		} else {
			t.Logf("not compared with gdb (%s):\n%s", c.gdbWrong, formatStacks(ours, physical(gdb[i])))
		}
		if c.wantSignal && i == 0 && !slices.ContainsFunc(ours, func(f ourFrame) bool { return f.kind == KindSignal }) {
			t.Errorf("no signal frame:\n%s", formatStacks(ours, nil))
		}
		if i == 0 {
			checkWant(t, ours, c.want)
		}
	}
}

var liveCases = []liveCase{
	{name: "O0", flags: []string{"-O0"}, args: []string{"recurse", "3"},
		want: []string{"stop_here", "recurse", "recurse", "recurse", "recurse", "main"}},
	{name: "O2", flags: []string{"-O2"}, args: []string{"recurse", "3"},
		want: []string{"stop_here", "recurse", "recurse", "recurse", "recurse", "main"}},
	{name: "omitfp", flags: []string{"-O2", "-fomit-frame-pointer"}, args: []string{"recurse", "5"},
		want: []string{"stop_here", "recurse", "main"}},
	{name: "deep", flags: []string{"-O1", "-fomit-frame-pointer"}, args: []string{"recurse", "300"},
		want: []string{"stop_here", "recurse", "main"}},
	{name: "static", flags: []string{"-O2", "-static"}, args: []string{"recurse", "4"},
		want: []string{"stop_here", "recurse", "main"}},
	{name: "signal", flags: []string{"-O2"}, args: []string{"signal"},
		want: []string{"stop_here", "in_handler", "handler", "interrupted", "do_signal", "main"}},
	{name: "altstack", flags: []string{"-O2"}, args: []string{"altstack"},
		want: []string{"stop_here", "in_handler", "handler", "interrupted", "do_signal", "main"}},
	{name: "signalO0", flags: []string{"-O0"}, args: []string{"altstack"},
		want: []string{"stop_here", "in_handler", "handler", "interrupted", "do_signal", "main"}},
	{name: "qsort", flags: []string{"-O2"}, args: []string{"qsort"},
		want: []string{"stop_here", "compare", "do_qsort", "main"}},
	{name: "alloca", flags: []string{"-O2"}, args: []string{"alloca", "5"},
		want: []string{"stop_here", "use_alloca", "main"}},
	{name: "realign", flags: []string{"-O2"}, args: []string{"realign", "3"},
		want: []string{"stop_here", "realigned", "main"}},
	{name: "stackrealign", flags: []string{"-O2", "-mstackrealign", "-mavx"}, args: []string{"alloca", "3"},
		want: []string{"stop_here", "use_alloca", "main"}},
	{name: "asm", flags: []string{"-O2"}, args: []string{"asm"}, asm: true,
		want: []string{"stop_here", "asm_callback", "uw_asm_call", "main"}},
	{name: "restorer", flags: []string{"-O2"}, args: []string{"restorer"}, asm: true, wantSignal: true,
		gdbWrong: "gdb 13 applies the preceding function's CFI to a return address at a CFI-less trampoline and unwinds garbage",
		want:     []string{"stop_here", "in_handler", "handler", "interrupted", "do_own_restorer", "main"}},
	{name: "debugframe", flags: []string{"-O2", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"},
		args: []string{"recurse", "3"}, want: []string{"stop_here", "recurse", "recurse", "main"}},
	{name: "debugframe-cie3", flags: []string{"-O2", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-Wa,--gdwarf-cie-version=3"},
		args: []string{"qsort"}, want: []string{"stop_here", "compare", "do_qsort", "main"}},
	{name: "debugframe-cie4", flags: []string{"-O0", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-Wa,--gdwarf-cie-version=4"},
		args: []string{"signal"}, want: []string{"stop_here", "in_handler", "handler", "interrupted", "do_signal", "main"}},
	{name: "noreturn", flags: []string{"-O2"}, args: []string{"noreturn"},
		want: []string{"stop_here", "die", "ends_in_noreturn", "main"}},
	{name: "nocfi", flags: []string{"-O1", "-g0", "-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"},
		args: []string{"recurse", "3"}, want: []string{"stop_here", "recurse", "recurse", "main"}},
	{name: "tailcall", flags: []string{"-O2"}, args: []string{"tailcall"},
		want: []string{"stop_here", "tail_target", "main"}},
	{name: "nullcall", flags: []string{"-O2"}, args: []string{"nullcall"}, stopSig: unix.SIGSEGV,
		want: []string{"call_null", "main"}},
	{name: "nullcall-handled", flags: []string{"-O2"}, args: []string{"nullcall-handled"}, wantSignal: true,
		gdbCmds: []string{"handle SIGSEGV nostop noprint pass"},
		want:    []string{"stop_here", "in_handler", "handler", "call_null", "call_null_handled", "main"}},
	{name: "cxx-exception", flags: []string{"-O2"}, sources: []string{"uw_cxx.cc"},
		want: []string{"stop_here", "Guard::~Guard", "thrower", "main"}},
	{name: "threads", flags: []string{"-O2"}, args: []string{"threads"},
		want: []string{"stop_here", "do_threads", "main"}},
}

func TestLiveAgainstGDB(t *testing.T) {
	for _, c := range liveCases {
		t.Run(c.name, func(t *testing.T) { runLiveCase(t, c) })
	}
}
