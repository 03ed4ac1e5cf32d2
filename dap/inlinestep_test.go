package dap

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// inlineStop is where a step ended as a debugger presents it: the top
// frame's function, line and pc, and the function of the frame above it.
type inlineStop struct {
	Func   string
	Line   int
	PC     uint64
	Caller string
}

func (s inlineStop) String() string {
	return fmt.Sprintf("%s:%d %#x (in %s)", s.Func, s.Line, s.PC, s.Caller)
}

// gdbInlineSteps runs gdb in batch mode on prog: a breakpoint on fn, then
// cmds (step or next), and reports the stop at fn and after each command.
func gdbInlineSteps(t *testing.T, prog, fn string, cmds []string) []inlineStop {
	t.Helper()
	gdbtest.Need(t)
	var py strings.Builder
	fmt.Fprintf(&py, "import gdb\ngdb.execute('break %s')\ngdb.execute('run')\ngdb.execute('delete')\n", fn)
	py.WriteString("def show():\n    f = gdb.newest_frame()\n    o = f.older()\n" +
		"    print('STOP %s %d %d %s' % (f.name(), f.find_sal().line, int(f.pc()), o.name() if o else '-'))\n")
	py.WriteString("show()\n")
	for _, c := range cmds {
		fmt.Fprintf(&py, "gdb.execute(%q, to_string=True)\nshow()\n", c)
	}
	out := gdbtest.Batch(t, "-ex", "source "+gdbtest.Script(t, "steps.py", py.String()), prog)
	re := regexp.MustCompile(`(?m)^STOP (\S+) (\d+) (\d+) (\S+)$`)
	var stops []inlineStop
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		line, _ := strconv.Atoi(m[2])
		pc, _ := strconv.ParseUint(m[3], 10, 64)
		stops = append(stops, inlineStop{Func: m[1], Line: line, PC: pc, Caller: m[4]})
	}
	if len(stops) != len(cmds)+1 {
		t.Fatalf("gdb reported %d stops for %d steps:\n%s", len(stops), len(cmds), out)
	}
	return stops
}

// frameName is a DAP frame's function as gdb's Frame.name() gives it: C++
// names without their parameters.
func frameName(name string) string {
	if i := strings.IndexByte(name, '('); i > 0 {
		name = name[:i]
	}
	return name
}

// sameName compares function names as gdb and sonde print them, leaving
// out a final list of generic arguments (gdb names Rust's
// core::ptr::write_volatile<i32>, sonde core::ptr::write_volatile).
func sameName(a, b string) bool {
	trim := func(s string) string {
		if strings.HasSuffix(s, ">") {
			if i := strings.LastIndexByte(s, ':'); strings.IndexByte(s[i+1:], '<') >= 0 {
				return s[:i+1+strings.IndexByte(s[i+1:], '<')]
			}
		}
		return s
	}
	return trim(a) == trim(b)
}

// dapInlineSteps does the same through `sonde dap`: a function breakpoint
// on fn, then next or stepIn for each command.
func dapInlineSteps(t *testing.T, prog, fn string, cmds []string) []inlineStop {
	t.Helper()
	c := newClient(t)
	c.launch(prog, nil)
	c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": fn}}})
	c.request("configurationDone", nil)
	st := c.stopped()
	tid := st.Body.ThreadId
	c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []any{}})
	show := func() inlineStop {
		frames := c.stack(tid)
		if len(frames) == 0 {
			t.Fatalf("no frames")
		}
		pc, _ := strconv.ParseUint(strings.TrimPrefix(frames[0].InstructionPointerReference, "0x"), 16, 64)
		s := inlineStop{Func: frameName(frames[0].Name), Line: frames[0].Line, PC: pc, Caller: "-"}
		if len(frames) > 1 {
			s.Caller = frameName(frames[1].Name)
		}
		return s
	}
	stops := []inlineStop{show()}
	for _, cmd := range cmds {
		req := map[string]string{"next": "next", "step": "stepIn", "finish": "stepOut"}[cmd]
		c.request(req, map[string]any{"threadId": tid})
		if st := c.stopped(); st.Body.Reason != "step" {
			t.Errorf("%s: stopped for %q", cmd, st.Body.Reason)
		}
		stops = append(stops, show())
	}
	c.request("disconnect", nil)
	return stops
}

// TestInlineSteppingMatchesGdb: at -O2 stepIn, next and stepOut stop where
// gdb's step, next and finish stop, in the same frames: at the first
// address of an inlined call the stop is in the caller on the call's line,
// a stepIn there enters the inlined function without running, a next
// steps over the whole inlined call, a stepOut in an inlined frame steps on
// in the caller; returns into the middle of inlined calls, inlined code
// interleaved with its caller's, and a tail call's return; C, C++ (methods
// and a template inlined) and Rust. The programs are built without PIE so
// that gdb's and sonde's addresses compare.
func TestInlineSteppingMatchesGdb(t *testing.T) {
	steps := func(cmd string, n int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = cmd
		}
		return s
	}
	cases := []struct {
		name, src string
		cmds      []string
		fn        string // the breakpoint's function, run when empty
	}{
		{"c-step", "step_inline.c", steps("step", 14), ""},
		{"c-next", "step_inline.c", steps("next", 6), ""},
		{"c-mixed", "step_inline.c", []string{"step", "next", "next", "step", "step", "next", "step", "next"}, ""},
		{"cxx-step", "step_inline.cc", steps("step", 13), ""},
		{"cxx-next", "step_inline.cc", steps("next", 4), ""},
		{"rust-step", "step_inline.rs", steps("step", 10), ""},
		{"rust-next", "step_inline.rs", steps("next", 4), ""},
		{"cxx-mixed", "step_inline.cc", []string{"next", "step", "next", "step", "step", "next", "step"}, ""},
		// leaf returns into middle (inlined into outer) at an address
		// where middle's code ranges abut ([a, b) [b, c)): the middle of
		// middle, not its entry, so the stop is in middle (gdb's
		// block_starting_point_at), not in outer at the call's line.
		{"c-return-mid-inline", "ex_inline.c", steps("next", 3), "leaf"},
		// finish (stepOut) in an inlined frame steps on in the caller
		// as gdb's does: it stops at the first address of the next
		// inlined call there (run:32, shown at the call's line), and
		// where the inlined call's code ends in the middle of a line of
		// the caller's caller (middle's last row is outer's return), at
		// the end of that line in main.
		{"c-finish", "step_inline.c", []string{"step", "step", "finish", "step", "step", "step", "finish", "next"}, ""},
		{"c-finish-leaves-function", "ex_inline.c", []string{"next", "next", "finish"}, "leaf"},
		{"cxx-finish", "step_inline.cc", []string{"step", "finish", "step", "step", "finish"}, ""},
		// init_registry's code resumes after a row of its caller's that is
		// not a statement: a next from its last line, and a finish, stop
		// where it resumes, shown at the call's line (open_state:34).
		{"c-next-interleaved", "step_inline_split.c", []string{"finish", "next", "next", "next", "next", "next"}, "newtable"},
		{"c-finish-interleaved", "step_inline_split.c", []string{"finish", "finish", "next", "next"}, "newtable"},
		// Out of a tail-called function: leaf returns into main.
		{"c-tailcall-next", "step_tailcall.c", []string{"step", "next", "next", "next"}, "mid"},
		{"c-tailcall-finish", "step_tailcall.c", []string{"step", "finish", "next"}, "mid"},
		{"c-tailcall-step", "step_tailcall.c", []string{"step", "step", "finish", "next"}, "mid"},
	}
	progs := map[string]string{}
	pt := t
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prog := progs[c.src]
			if prog == "" {
				// Built in the parent test's directory: the cases share it.
				name := strings.ReplaceAll(c.src, ".", "_")
				if strings.HasSuffix(c.src, ".rs") {
					testprog.RequireRustc(t)
					prog = testprog.BuildRust(pt, c.src, name, "-C", "opt-level=2", "-C", "relocation-model=static")
				} else {
					prog = testprog.Build(pt, testprog.Spec{Sources: []string{c.src}, Flags: []string{"-O2", "-no-pie"}, Name: name})
				}
				progs[c.src] = prog
			}
			fn := c.fn
			if fn == "" {
				fn = "run"
			}
			want := gdbInlineSteps(t, prog, fn, c.cmds)
			got := dapInlineSteps(t, prog, fn, c.cmds)
			for i := range want {
				if i < len(got) && want[i].Caller == "-" {
					got[i].Caller = "-" // gdb's backtrace ends at main
				}
				if i < len(got) && sameName(got[i].Func, want[i].Func) && sameName(got[i].Caller, want[i].Caller) {
					got[i].Func, got[i].Caller = want[i].Func, want[i].Caller
				}
				if i >= len(got) || got[i] != want[i] {
					cmd := "break " + fn
					if i > 0 {
						cmd = c.cmds[i-1]
					}
					t.Errorf("stop %d (%s): sonde %v, gdb %v", i, cmd, got[i], want[i])
				}
			}
			if t.Failed() {
				t.Logf("sonde %v\ngdb   %v", got, want)
			}
		})
	}
}
