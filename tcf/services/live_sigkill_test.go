package services_test

import (
	"bufio"
	"debug/elf"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
)

// agentProcess runs the built `sonde agent` binary with extra flags and
// connects a recording client to it. The agent is killed at cleanup if the
// test has not ended it.
func agentProcess(t *testing.T, flags ...string) (*exec.Cmd, *liveAgent) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the sonde binary")
	}
	agent := exec.Command(testprog.Sonde(t), append([]string{"agent", "--listen", "TCP:127.0.0.1:0"}, flags...)...)
	out, _ := agent.StdoutPipe()
	var log strings.Builder
	agent.Stderr = &log
	t.Cleanup(func() {
		// (Runs after the cleanup below has waited for the agent.)
		if t.Failed() {
			t.Logf("agent log:\n%s", log.String())
		}
	})
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "sonde agent listening on TCP:")
	if err != nil || !ok {
		t.Fatalf("agent said %q (%v)", line, err)
	}
	la := &liveAgent{t: t, addr: addr}
	la.c, la.events = la.dial()
	return agent, la
}

// startLooping starts agent_prog calling hit() in a loop, untraced, as a
// child of the test (so the test sees how it ends).
func startLooping(t *testing.T, prog string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(prog, "loop", "1000000000000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// TestAgentSIGKILLAtBreakpoint: a thread sits at a breakpoint on hit()'s
// `push %rbp` when the agent is SIGKILLed. The kernel releases the thread; it
// must re-execute the int3 and die of SIGTRAP (the README's promise), not run
// on from the middle of the function with the push skipped (which returns
// through the wrong stack slot: SIGSEGV).
func TestAgentSIGKILLAtBreakpoint(t *testing.T) {
	prog := agentProg(t)
	if b := fileByteAt(t, prog, "hit"); b != 0x55 {
		t.Skipf("hit() starts with %#x, not push %%rbp: the test needs the push", b)
	}
	agent, la := agentProcess(t)
	cmd := startLooping(t, prog)
	proc := "P" + strconv.Itoa(cmd.Process.Pid)
	la.ok("Processes", "attach", proc)
	la.breakAt(mainThread(proc), map[string]any{"ID": "hit", "Location": "hit"})
	if err := agent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	agent.Wait()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the program still runs 20 s after the agent was killed (state %s)", procState(t, cmd.Process.Pid))
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTRAP {
		t.Fatalf("the program ended with %v (%v), want death by SIGTRAP at the int3", cmd.ProcessState, err)
	}
}

// fileByteAt is the first byte of function fn in the executable path.
func fileByteAt(t *testing.T, path, fn string) byte {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return fileByte(t, f, symbolAddr(t, path, fn))
}
