package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestStackDebugHintsOnlyForShownFiles checks that `sonde stack` says how to
// get debug information only for files its frames are in. The glibc waits
// program (-O2: call sites, whose callees are looked up by name in every
// module) also maps libstdc++ and libgcc_s, linked and never called, and
// the vDSO: no warning names them. The program blocked under libgcc_s's
// _Unwind_Backtrace has a frame there, without lines: its hint is printed.
func TestStackDebugHintsOnlyForShownFiles(t *testing.T) {
	for _, tc := range []struct {
		src, name, want string
	}{
		{"stk_waits.c", "stk_waits_hints", ""},
		{"stk_nodebug.c", "stk_nodebug_hints", "libgcc_s"},
	} {
		t.Run(tc.src, func(t *testing.T) {
			path := testprog.Build(t, testprog.Spec{Sources: []string{tc.src},
				Flags: []string{"-O2", "-Wl,--no-as-needed", "-lstdc++", "-lgcc_s"}, Name: tc.name})
			cmd := startStackProgram(t, path)
			out, errOut, code := runCLI(t, "stack", strconv.Itoa(cmd.Process.Pid))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
				if strings.Contains(l, "libstdc++") || strings.Contains(l, "[vdso]") ||
					tc.want == "" && strings.Contains(l, "libgcc_s") {
					t.Errorf("a warning about a file without frames: %s", l)
				}
			}
			if tc.want != "" && strings.Contains(out, "() from ") && !strings.Contains(errOut, tc.want) {
				t.Errorf("no hint for %s, whose frame has no lines:\n%s\nstderr:\n%s", tc.want, out, errOut)
			}
		})
	}
}
