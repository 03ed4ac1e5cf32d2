package dap

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/testprog"
)

// procStatus returns a field of /proc/PID/status ("" when the process is
// gone).
func procStatus(pid int, field string) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == field {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// gone reports whether pid has ended (a zombie counts: its parent reaps it).
func gone(pid int) bool {
	s := procStatus(pid, "State")
	return s == "" || strings.HasPrefix(s, "Z")
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 400; i++ {
		if gone(pid) {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Errorf("process %d still there: %s", pid, procStatus(pid, "State"))
}

// TestStopOnEntryPauseDisconnect: stopOnEntry stops before the program's
// first instruction runs; pause stops a running program; disconnect kills
// a launched program.
func TestStopOnEntryPauseDisconnect(t *testing.T) {
	prog := buildProg(t)
	c := newClient(t)
	pid := c.launch(prog, map[string]any{"stopOnEntry": true}, "wait")
	c.request("configurationDone", nil)
	st := c.stopped()
	if st.Body.Reason != "entry" || st.Body.ThreadId != pid {
		t.Fatalf("stopped: %+v", st.Body)
	}
	if out := c.output("stdout"); out != "" {
		t.Errorf("the program ran before its entry stop: %q", out)
	}
	c.request("continue", map[string]any{"threadId": pid})
	c.wait("program output", func(m godap.Message) bool {
		o, ok := m.(*godap.OutputEvent)
		return ok && o.Body.Category == "stdout"
	})
	// Pause until the program is past its first calls of add (under load
	// 100 ms may not get it there): every pause must stop it all the same.
	for try := 0; ; try++ {
		time.Sleep(100 * time.Millisecond)
		c.request("pause", map[string]any{"threadId": pid})
		st = c.stopped()
		if st.Body.Reason != "pause" || st.Body.ThreadId != pid || !st.Body.AllThreadsStopped {
			t.Fatalf("pause: %+v", st.Body)
		}
		e := c.evaluate("counter > 0", 0, "repl")
		if e.Body.Result == "true" || e.Body.Result == "1" {
			break
		}
		if try == 100 {
			t.Fatalf("counter > 0 after %d pauses: %+v", try+1, e.Body)
		}
		c.request("continue", map[string]any{"threadId": pid})
	}
	if e := c.evaluate("bt", 0, "repl"); !strings.Contains(e.Body.Result, "main") {
		t.Errorf("bt: %q", e.Body.Result)
	}
	if e := c.evaluate("info registers rip", 0, "repl"); !strings.HasPrefix(e.Body.Result, "rip") {
		t.Errorf("info registers rip: %q", e.Body.Result)
	}
	if e := c.evaluate("x/2dw &g_origin", 0, "repl"); !strings.Contains(e.Body.Result, "\t1\t2") {
		t.Errorf("x/2dw &g_origin: %q", e.Body.Result)
	}
	c.request("disconnect", nil)
	waitGone(t, pid)
}

// startWaiting runs the test program in its endless mode, outside sonde.
func startWaiting(t *testing.T, prog string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(prog, "wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// TestAttachDetach: an attached program runs on after configurationDone
// (no stopped event); breakpoints stop it; disconnect with
// terminateDebuggee false leaves it running, untraced, not stopped.
func TestAttachDetach(t *testing.T) {
	prog := buildProg(t)
	cmd := startWaiting(t, prog)
	pid := cmd.Process.Pid
	c := newClient(t)
	c.initialize()
	c.request("attach", map[string]any{"pid": strconv.Itoa(pid), "program": prog})
	c.event("initialized")
	c.request("configurationDone", nil)
	c.noEvent("stopped", 300*time.Millisecond)
	if s := procStatus(pid, "State"); !strings.HasPrefix(s, "S") && !strings.HasPrefix(s, "R") {
		t.Errorf("attached program is %s after configurationDone", s)
	}
	bps := c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": testprog.Source("dap_prog.c")},
		"breakpoints": []map[string]any{{"line": markerLine(t, "dap_prog.c", "add")}}}).(*godap.SetBreakpointsResponse).Body.Breakpoints
	if !bps[0].Verified {
		t.Fatalf("%+v", bps)
	}
	st := c.stopped()
	if st.Body.Reason != "breakpoint" || st.Body.ThreadId != pid {
		t.Fatalf("stopped: %+v", st.Body)
	}
	frames := c.stack(pid)
	if frames[0].Name != "add" || frames[1].Name != "main" {
		t.Errorf("frames: %+v", frames)
	}
	// A watch through setVariable: the new value is returned.
	scopes := c.scopes(frames[0].Id)
	args := scopeByName(t, scopes, "Arguments").VariablesReference
	sv := c.request("setVariable", map[string]any{"variablesReference": args, "name": "a", "value": "40"}).(*godap.SetVariableResponse)
	if sv.Body.Value != "40" {
		t.Errorf("setVariable: %+v", sv.Body)
	}
	if a := varByName(t, c.vars(args, nil), "a"); a.Value != "40" {
		t.Errorf("a after setVariable: %+v", a)
	}
	se := c.request("setExpression", map[string]any{"expression": "g_origin.x", "value": "7", "frameId": frames[0].Id}).(*godap.SetExpressionResponse)
	if se.Body.Value != "7" {
		t.Errorf("setExpression: %+v", se.Body)
	}
	c.request("disconnect", map[string]any{"terminateDebuggee": false})
	time.Sleep(100 * time.Millisecond)
	if tr := procStatus(pid, "TracerPid"); tr != "0" {
		t.Errorf("TracerPid %s after detach", tr)
	}
	if s := procStatus(pid, "State"); !strings.HasPrefix(s, "S") && !strings.HasPrefix(s, "R") {
		t.Errorf("detached program is %s", s)
	}
}

// TestVanishedClient: a client that goes away without disconnect leaves a
// launched program killed and an attached one detached and running.
func TestVanishedClient(t *testing.T) {
	prog := buildProg(t)
	c := newClient(t)
	pid := c.launch(prog, nil, "wait")
	c.request("configurationDone", nil)
	c.stdin.Close()
	waitGone(t, pid)

	cmd := startWaiting(t, prog)
	c = newClient(t)
	c.initialize()
	c.request("attach", map[string]any{"pid": cmd.Process.Pid})
	c.event("initialized")
	c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "add"}}})
	c.request("configurationDone", nil)
	c.stopped() // stopped at a breakpoint, when the client vanishes
	c.stdin.Close()
	c.cmd.Wait()
	if tr := procStatus(cmd.Process.Pid, "TracerPid"); tr != "0" {
		t.Errorf("TracerPid %s after the client vanished", tr)
	}
	time.Sleep(50 * time.Millisecond)
	if s := procStatus(cmd.Process.Pid, "State"); !strings.HasPrefix(s, "S") && !strings.HasPrefix(s, "R") {
		t.Errorf("program is %s after the client vanished", s)
	}
	// Its code is as it was: it keeps calling add without trapping.
	cmd.Process.Signal(syscall.SIGTERM)
}

// TestCoreFile: attach to a core file: the crashed thread is shown
// stopped with the signal, its stack and variables readable; running and
// writing are refused.
func TestCoreFile(t *testing.T) {
	prog := buildProg(t)
	dir := t.TempDir()
	sh := exec.Command("sh", "-c", "ulimit -c unlimited; exec "+prog+" crash")
	sh.Dir = dir
	sh.Run()
	cores, _ := filepath.Glob(filepath.Join(dir, "core*"))
	if len(cores) == 0 {
		pattern, _ := os.ReadFile("/proc/sys/kernel/core_pattern")
		t.Skipf("no core file was written (core_pattern %q)", strings.TrimSpace(string(pattern)))
	}
	c := newClient(t)
	c.initialize()
	c.request("attach", map[string]any{"program": prog, "coreFile": cores[0]})
	c.event("initialized")
	c.request("configurationDone", nil)
	st := c.stopped()
	if st.Body.Reason != "exception" || !strings.Contains(st.Body.Description, "SIGSEGV") {
		t.Fatalf("stopped: %+v", st.Body)
	}
	frames := c.stack(st.Body.ThreadId)
	if frames[0].Name != "main" || frames[0].Line != markerLine(t, "dap_prog.c", "crash") {
		t.Fatalf("frames: %+v", frames)
	}
	locals := c.vars(scopeByName(t, c.scopes(frames[0].Id), "Locals").VariablesReference, nil)
	sh2 := varByName(t, locals, "sh")
	if sh2.VariablesReference == 0 || !strings.Contains(sh2.Value, "tags = {10, 20, 30, 40, 50}") {
		t.Errorf("sh: %+v", sh2)
	}
	info := c.request("exceptionInfo", map[string]any{"threadId": st.Body.ThreadId}).(*godap.ExceptionInfoResponse)
	if info.Body.ExceptionId != "SIGSEGV" {
		t.Errorf("exceptionInfo: %+v", info.Body)
	}
	if er := c.errorResponse(c.send("continue", map[string]any{"threadId": st.Body.ThreadId})); !strings.Contains(er.Message, "read-only") {
		t.Errorf("continue on a core: %q", er.Message)
	}
	if er := c.errorResponse(c.send("setExpression", map[string]any{"expression": "g_origin.x", "value": "7", "frameId": frames[0].Id})); er.Message == "" {
		t.Errorf("setExpression on a core: %+v", er)
	}
	c.request("disconnect", nil)
}

// TestThreads: a launched program's threads are announced with thread
// events and listed; pause stops them all (one stopped event, with
// allThreadsStopped); every thread's stack can be shown.
func TestThreads(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"stk_threads.c"}, Flags: []string{"-O0"}})
	c := newClient(t)
	pid := c.launch(prog, nil, "threads", "3")
	c.request("configurationDone", nil)
	c.wait("ready", func(m godap.Message) bool {
		o, ok := m.(*godap.OutputEvent)
		return ok && strings.Contains(o.Body.Output, "ready")
	})
	started := map[int]bool{}
	for len(started) < 4 {
		e := c.event("thread").(*godap.ThreadEvent)
		if e.Body.Reason == "started" {
			started[e.Body.ThreadId] = true
		}
	}
	threads := c.request("threads", nil).(*godap.ThreadsResponse).Body.Threads
	if len(threads) != 4 || threads[0].Id != pid {
		t.Fatalf("threads: %+v", threads)
	}
	c.request("pause", map[string]any{"threadId": pid})
	st := c.stopped()
	if st.Body.Reason != "pause" || !st.Body.AllThreadsStopped {
		t.Fatalf("pause: %+v", st.Body)
	}
	c.noEvent("stopped", 200*time.Millisecond)
	for _, th := range threads {
		if f := c.stack(th.Id); len(f) < 2 {
			t.Errorf("thread %d: %+v", th.Id, f)
		}
	}
	c.request("continue", map[string]any{"threadId": pid})
	c.request("terminate", nil)
	exited := c.event("exited")
	term := c.event("terminated")
	if exited.GetSeq() > term.GetSeq() {
		t.Errorf("exited (seq %d) after terminated (seq %d)", exited.GetSeq(), term.GetSeq())
	}
	waitGone(t, pid)
	c.request("disconnect", nil)
}

// TestSignalStops: a fault stops the program with reason exception (and
// exceptionInfo names the signal); with the signals filter off it stops
// all the same (the program has no handler: the signal would kill it), and
// continuing lets it die of it.
func TestSignalStops(t *testing.T) {
	prog := buildProg(t)
	c := newClient(t)
	c.launch(prog, nil, "crash")
	c.request("configurationDone", nil)
	st := c.stopped()
	if st.Body.Reason != "exception" || !strings.Contains(st.Body.Description, "SIGSEGV") {
		t.Fatalf("stopped: %+v", st.Body)
	}
	if f := c.stack(st.Body.ThreadId); f[0].Name != "main" || f[0].Line != markerLine(t, "dap_prog.c", "crash") {
		t.Errorf("frame 0: %+v", f[0])
	}
	info := c.request("exceptionInfo", map[string]any{"threadId": st.Body.ThreadId}).(*godap.ExceptionInfoResponse)
	if info.Body.ExceptionId != "SIGSEGV" || !strings.Contains(info.Body.Description, "0x0") {
		t.Errorf("exceptionInfo: %+v", info.Body)
	}
	c.request("disconnect", nil)

	c = newClient(t)
	c.launch(prog, nil, "crash")
	c.request("setExceptionBreakpoints", map[string]any{"filters": []string{}})
	c.request("configurationDone", nil)
	if st := c.stopped(); st.Body.Reason != "exception" || !strings.Contains(st.Body.Description, "SIGSEGV") {
		t.Fatalf("filter off: stopped %+v", st.Body)
	} else {
		c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
	}
	if e := c.event("exited").(*godap.ExitedEvent); e.Body.ExitCode != 128+11 {
		t.Errorf("exit code %d, want 139 (SIGSEGV)", e.Body.ExitCode)
	}
	c.request("disconnect", nil)
}
