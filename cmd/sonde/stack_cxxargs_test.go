package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// TestStackCxxArgumentListsMatchGdb compares, line for line with gdb's bt,
// the frames of testdata/stk_cxxargs.cc whose argument lists sonde got
// wrong on real C++ programs: a lambda's operator() at -O0 (its code is
// nested in main's DIE: no arguments were found), unnamed parameters
// (printed as "=0"), and a libstdc++ frame named by its ELF symbol with a
// parameter list ("std::thread::join()", printed without gdb's " ()"). The
// rest of these backtraces differs from gdb's by its naming of libstdc++'s
// templates (README, Known differences).
func TestStackCxxArgumentListsMatchGdb(t *testing.T) {
	gdbtest.Need(t)
	for _, opt := range []string{"-O0", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			path := testprog.Build(t, testprog.Spec{Sources: []string{"stk_cxxargs.cc"}, Flags: []string{opt}, Name: "stk_cxxargs" + opt})
			cmd := startStackProgram(t, path)
			pid := strconv.Itoa(cmd.Process.Pid)
			got, errOut, code := runCLI(t, "stack", pid)
			if code != 0 {
				t.Fatalf("sonde: exit %d: %s", code, errOut)
			}
			out := gdbtest.Batch(t, append(append([]string{}, noPrinters...), "-ex", "thread apply all bt", "-p", pid)...)
			want := map[string]bool{}
			for _, l := range strings.Split(out, "\n") {
				for _, fn := range []string{" operator() (", " handler (", " with_tag (", " std::thread::join() ("} {
					if strings.HasPrefix(l, "#") && strings.Contains(l, fn) {
						want[l] = true
					}
				}
			}
			if len(want) < 3 {
				t.Fatalf("gdb shows too few of the frames looked for:\n%s", out)
			}
			lines := map[string]bool{}
			for _, l := range strings.Split(got, "\n") {
				lines[l] = true
			}
			for l := range want {
				if !lines[l] {
					t.Errorf("gdb's frame\n%s\nnot in sonde's backtrace:\n%s", l, got)
				}
			}
		})
	}
}
