package dap

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/gdbtest"
)

// TestLaunchDisablesASLR: a launched program runs without address
// randomisation unless disableASLR is false (lldb-dap's argument and
// default; gdb's disable-randomization): a PIE's function is at gdb's
// address in every run, so addresses in watches and memory views are
// those of other sessions and of gdb (found in the sixth real-program
// trial: lz4's pointers differed from gdb's at every stop).
func TestLaunchDisablesASLR(t *testing.T) {
	gdbtest.Need(t)
	prog := buildProg(t) // a PIE
	gdb := gdbPrints(t, prog, "dap_prog.c", markerLine(t, "dap_prog.c", "add"), []string{"print &add"})
	addrOf := func(extra map[string]any) string {
		c := newClient(t)
		c.launch(prog, extra)
		c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "add"}}})
		c.request("configurationDone", nil)
		st := c.stopped()
		frames := c.stack(st.Body.ThreadId)
		r := c.evaluate("&add", frames[0].Id, "watch").Body
		c.request("disconnect", nil)
		return "(" + r.Type + ") " + r.Result
	}
	if got := addrOf(nil); got != gdb[0] {
		t.Errorf("&add: sonde %q, gdb %q", got, gdb[0])
	}
	if got := addrOf(map[string]any{"disableASLR": false}); got == gdb[0] {
		t.Errorf("disableASLR false: &add is gdb's %q, as without randomisation", got)
	}
}

// TestRunInTerminalDisablesASLR: a program the client's terminal starts
// (runInTerminal) runs without address randomisation too, unless
// disableASLR is false: sonde has the stopped shell that execs it set its
// personality's ADDR_NO_RANDOMIZE. A PIE's add is at gdb's address in two
// runs, and /proc/PID/personality says so (before, the terminal's program
// ran randomised whatever disableASLR said).
func TestRunInTerminalDisablesASLR(t *testing.T) {
	gdbtest.Need(t)
	prog := buildProg(t) // a PIE
	gdb := gdbPrints(t, prog, "dap_prog.c", markerLine(t, "dap_prog.c", "add"), []string{"print &add"})
	run := func(extra map[string]any) (addr string, personality uint64) {
		c := newClient(t)
		c.request("initialize", map[string]any{"adapterID": "sonde", "linesStartAt1": true, "supportsRunInTerminalRequest": true})
		args := map[string]any{"program": prog, "args": []string{"run"}, "runInTerminal": true}
		for k, v := range extra {
			args[k] = v
		}
		cmd := terminalLaunch(t, c, args)
		c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "add"}}})
		c.request("configurationDone", nil)
		st := c.stopped()
		if st.Body.ThreadId != cmd.Process.Pid {
			t.Fatalf("stopped %+v, the terminal's program is %d", st.Body, cmd.Process.Pid)
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/personality", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		personality, err = strconv.ParseUint(strings.TrimSpace(string(b)), 16, 64)
		if err != nil {
			t.Fatalf("/proc/%d/personality: %q", cmd.Process.Pid, b)
		}
		frames := c.stack(st.Body.ThreadId)
		r := c.evaluate("&add", frames[0].Id, "watch").Body
		c.request("disconnect", nil)
		return "(" + r.Type + ") " + r.Result, personality
	}
	for i := 0; i < 2; i++ {
		if got, pers := run(nil); got != gdb[0] || pers&addrNoRandomize == 0 {
			t.Errorf("run %d: &add %q (gdb %q), personality %#x", i, got, gdb[0], pers)
		}
	}
	if self, _ := os.ReadFile("/proc/self/personality"); strings.TrimSpace(string(self)) != "00000000" {
		t.Logf("this test runs with personality %s: disableASLR false not checked", self)
		return
	}
	if got, pers := run(map[string]any{"disableASLR": false}); got == gdb[0] || pers&addrNoRandomize != 0 {
		t.Errorf("disableASLR false: &add %q (gdb's without randomisation %q), personality %#x", got, gdb[0], pers)
	}
}

// terminalLaunch sends launch with args (runInTerminal among them), plays
// the client's terminal (terminalStart) and waits for the launch's answer
// and the initialized event.
func terminalLaunch(t *testing.T, c *client, args map[string]any) *exec.Cmd {
	t.Helper()
	cmd, seq := terminalStart(t, c, args, nil)
	c.response(seq)
	c.event("initialized")
	return cmd
}

// terminalStart sends launch with args and plays the client's terminal: it
// runs the command the runInTerminal request names, as a child of the test
// writing to stdout (nil: nowhere), until the test ends. seq is the
// launch's, not yet answered.
func terminalStart(t *testing.T, c *client, args map[string]any, stdout io.Writer) (cmd *exec.Cmd, seq int) {
	t.Helper()
	seq = c.send("launch", args)
	req := c.wait("runInTerminal", func(m godap.Message) bool {
		_, ok := m.(*godap.RunInTerminalRequest)
		return ok
	}).(*godap.RunInTerminalRequest)
	a := req.Arguments
	cmd = exec.Command(a.Args[0], a.Args[1:]...)
	cmd.Dir = a.Cwd
	cmd.Env = os.Environ()
	for k, v := range a.Env {
		cmd.Env = append(cmd.Env, k+"="+fmt.Sprint(v))
	}
	cmd.Stdout = stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, seq
}
