package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
)

// The DAP client tests run testdata/dapclient/session.js: Microsoft's
// DebugClient (@vscode/debugadapter-testsupport, what VS Code adapter suites
// use) drives `sonde dap` through a whole session on the C, C++ and Rust
// programs testdata/dapclient_prog.*, as an editor would. The same scenario passes
// against lldb-vscode-14 (bench/dap/run.sh runs both).

// dcProgram is one test program of the scenario.
type dcProgram struct {
	lang, source, program string
}

// dcScenarioTimeout bounds one node run (one session); a healthy one
// takes about a second.
const dcScenarioTimeout = 90 * time.Second

// TestDAPDebugClient: the complete launch session (breakpoints plain,
// conditional and logpoint; threads, stackTrace, scopes, variables, evaluate,
// setVariable, next/stepIn/stepOut, exited before terminated), a launch with
// stopOnEntry and env as an object ended by disconnect, a core
// (attach {program, coreFile}: stack and locals) and attach {pid} with pause
// and disconnect {terminateDebuggee: false} leaving the program running and
// untraced, and a client that vanishes (stdin and stdout closed) from a
// paused attached program (it runs on, untraced) and from a launched one at
// a breakpoint (it is gone), for C, C++ and Rust.
func TestDAPDebugClient(t *testing.T) {
	node, modules := dcClient(t)
	sonde := testprog.Sonde(t)
	for _, p := range dcPrograms(t) {
		for _, mode := range []string{"launch", "entry", "core", "attach", "vanish"} {
			t.Run(p.lang+"/"+mode, func(t *testing.T) {
				if p.program == "" {
					t.Skipf("SKIP: %s", p.source)
				}
				runDCScenario(t, node, modules, mode, p, dcKnown[p.lang+"/"+mode], sonde, "dap")
			})
		}
	}
}

// dcKnown lists sonde dap's known bugs, by scenario: the scenario's checks
// tagged so print KNOWN (or FIXED, when the flag can go) instead of failing.
// None today (rust-prologue, a Rust step-in stopping on the fn line, was
// fixed in session.PrologueEnd's LLVM rule).
var dcKnown = map[string][]string{}

// TestDAPDebugClientSocket: the launch session of the C program over the
// socket transport (`sonde dap --listen TCP:127.0.0.1:0`).
func TestDAPDebugClientSocket(t *testing.T) {
	node, modules := dcClient(t)
	cmd := exec.Command(testprog.Sonde(t), "dap", "--listen", "TCP:127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("sonde dap --listen did not end within 10 s of SIGTERM")
		}
	}()
	r := bufio.NewReader(stderr)
	line, err := r.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "sonde dap listening on TCP:")
	if err != nil || !ok {
		t.Fatalf("sonde dap --listen said %q (%v)", line, err)
	}
	go io.Copy(os.Stderr, r)
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	runDCScenario(t, node, modules, "launch", dcPrograms(t)[0], []string{"--port", port})
}

// TestDAPDebugClientScenarioLLDB runs the C launch scenario against
// lldb-vscode 14 (Debian's lldb), a real adapter: a check that fails there
// too is a wrong check, not a sonde bug. (The entry, core and attach
// scenarios pass there too, bench/dap/run.sh aside; each lldb-vscode session
// takes seconds, so CI runs the one that checks most.) --lldb14 turns lldb-vscode 14's known differences
// from what issue 24 asks (no logpoints; "exception" as the reason of a
// pause or an entry stop; env only as an array) into notes.
func TestDAPDebugClientScenarioLLDB(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP (-short): the scenario's check against lldb-vscode takes ~10 s")
	}
	node, modules := dcClient(t)
	lldb, err := exec.LookPath("lldb-vscode-14")
	if err != nil {
		t.Skip("SKIP: lldb-vscode-14 is not installed (scripts/setup installs lldb): the scenario is not checked against it")
	}
	runDCScenario(t, node, modules, "launch", dcPrograms(t)[0], []string{"--lldb14"}, lldb)
}

// runDCScenario runs session.js in mode against the adapter command line;
// a failed check fails the test with the scenario's whole output.
func runDCScenario(t *testing.T, node, modules, mode string, p dcProgram, flags []string, adapter ...string) {
	t.Helper()
	args := []string{"--mode", mode, "--program", p.program, "--source", p.source, "--lang", p.lang}
	runNodeScenario(t, node, modules, "session.js", filepath.Dir(p.program), append(args, flags...), adapter)
}

// runNodeScenario runs the DebugClient script testdata/dapclient/SCRIPT
// with args in dir against the adapter command line (none: the script
// connects to a port given in args). Exit code 3 is the script's skip; any
// other failure fails the test with the scenario's whole output, and the
// KNOWN/FIXED notes of a passing run are logged.
func runNodeScenario(t *testing.T, node, modules, script, dir string, args, adapter []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dcScenarioTimeout)
	defer cancel()
	args = append([]string{testprog.Source("dapclient/" + script)}, args...)
	if os.Getenv("SONDE_DAPCLIENT_VERBOSE") != "" { // every message and the adapter's stderr
		args = append(args, "--verbose")
	}
	if len(adapter) > 0 {
		args = append(append(args, "--"), adapter...)
	}
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "KNOWN ") || strings.HasPrefix(l, "FIXED ") {
				t.Log(l)
			}
		}
		if testing.Verbose() {
			t.Logf("%s", out)
		}
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		t.Skipf("%s", dcLastLine(out))
	case ctx.Err() != nil:
		t.Fatalf("node %s: no end within %v\n%s", strings.Join(args, " "), dcScenarioTimeout, out)
	default:
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func dcLastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// dcPrograms builds testdata/dapclient_prog.{c,cc,rs} at -O0. A Rust program
// without rustc has no program, and its source field says why.
func dcPrograms(t *testing.T) []dcProgram {
	t.Helper()
	c := testprog.Build(t, testprog.Spec{Sources: []string{"dapclient_prog.c"}, Flags: []string{"-O0"}, Name: "dapclient_prog_c"})
	cc := testprog.Build(t, testprog.Spec{Sources: []string{"dapclient_prog.cc"}, Flags: []string{"-O0"}, Name: "dapclient_prog_cc"})
	progs := []dcProgram{
		{"c", testprog.Source("dapclient_prog.c"), c},
		{"cpp", testprog.Source("dapclient_prog.cc"), cc},
	}
	rust := dcProgram{lang: "rust", source: testprog.Source("dapclient_prog.rs")}
	if rustc := testprog.Rustc(); rustc == "" {
		rust.source = "rustc is not installed (scripts/setup installs it): the Rust program is not built"
	} else {
		var err error
		if rust.program, err = testprog.BuildRustE(rustc, "dapclient_prog.rs", "dapclient_prog_rs", "-C", "opt-level=0"); err != nil {
			t.Fatal(err)
		}
	}
	return append(progs, rust)
}

func dcFileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// dcClient returns node and the node_modules directory holding the pinned
// DebugClient packages: where scripts/setup put them, or installed there
// now with npm ci. It skips, saying why, only when node or the packages
// cannot be had.
func dcClient(t *testing.T) (node, modules string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIP: node is not installed (scripts/setup installs nodejs): the DAP client tests need it")
	}
	return node, npmModules(t, "dapclient", "the DebugClient package")
}
