package main

import (
	"os/exec"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestDAPDebugClientFault: the DebugClient's fault scenario on the C
// program: with the "signals" exception filter off, abort()'s SIGABRT
// still stops at crash(), exceptionInfo names it, continue ends the
// program with the shell's code 134; and the same scenario against
// lldb-vscode 14, whose differences (no description in the stopped event,
// exit code 6) are notes.
func TestDAPDebugClientFault(t *testing.T) {
	node, modules := dcClient(t)
	p := dcPrograms(t)[0]
	t.Run("sonde", func(t *testing.T) {
		runDCScenario(t, node, modules, "fault", p, nil, testprog.Sonde(t), "dap")
	})
	t.Run("lldb-vscode-14", func(t *testing.T) {
		if testing.Short() {
			t.Skip("SKIP (-short): the check against lldb-vscode takes ~5 s")
		}
		lldb, err := exec.LookPath("lldb-vscode-14")
		if err != nil {
			t.Skip("SKIP: lldb-vscode-14 is not installed (scripts/setup installs lldb): the scenario is not checked against it")
		}
		runDCScenario(t, node, modules, "fault", p, []string{"--lldb14"}, lldb)
	})
}
