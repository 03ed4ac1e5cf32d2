package services_test

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
)

// The tests of what a channel owns (ownership.go): a client that drops
// leaves nothing stopped or traced because of it.

// startBlocked starts tp_threads untraced (five threads, all blocked in the
// kernel) as a child of the test and waits until every thread runs.
func startBlocked(t *testing.T) *exec.Cmd {
	t.Helper()
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"tp_threads.c"}})
	cmd := exec.Command(prog)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.HasPrefix(line, "ready") {
		t.Fatalf("tp_threads said %q (%v)", line, err)
	}
	return cmd
}

// second connects another client to the same agent.
func (la *liveAgent) second() *liveAgent {
	la.t.Helper()
	o := &liveAgent{t: la.t, addr: la.addr, srv: la.srv, agent: la.agent, tgt: la.tgt}
	o.c, o.events = o.dial()
	return o
}

// taskStates is the State letter of each thread of pid ("" if it is gone).
func taskStates(pid int) map[int]string {
	out := map[int]string{}
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(dir + "/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "State:"); ok {
				out[tid] = strings.TrimSpace(v)[:1]
			}
		}
	}
	return out
}

// eventually polls cond until it holds, failing the test after 20 s.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after 20 s (%s)", what, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// released is a condition: pid is untraced and none of its threads is
// stopped (tracing stop t, or job-control stop T).
func released(t *testing.T, pid int) func() (bool, string) {
	return func() (bool, string) {
		tp := tracerPid(t, pid)
		states := taskStates(pid)
		ok := tp == 0 && len(states) > 0
		for _, s := range states {
			ok = ok && s != "t" && s != "T"
		}
		return ok, "TracerPid " + strconv.Itoa(tp) + ", thread states " + fmtStates(states)
	}
}

// threadStopped is a condition: thread tid of pid is in a tracing stop (or
// not, with want false).
func threadStopped(pid, tid int, want bool) func() (bool, string) {
	return func() (bool, string) {
		s := taskStates(pid)[tid]
		return (s == "t") == want && s != "", "state " + s
	}
}

func fmtStates(m map[int]string) string {
	var b strings.Builder
	for tid, s := range m {
		b.WriteString(strconv.Itoa(tid) + ":" + s + " ")
	}
	return b.String()
}

// threadsOf lists the thread IDs of a process, the main thread first.
func (la *liveAgent) threadsOf(proc string) []string {
	la.t.Helper()
	var e error
	var ids []string
	la.decode("RunControl", "getChildren", []any{proc}, &e, &ids)
	return ids
}

// isSuspended asks RunControl.getState whether a thread is suspended.
func (la *liveAgent) isSuspended(thread string) bool {
	la.t.Helper()
	var e error
	var suspended bool
	var pc uint64
	var reason, params any
	la.decode("RunControl", "getState", []any{thread}, &e, &suspended, &pc, &reason, &params)
	return suspended
}

// agentSaysRunning is a condition: RunControl.getState reports thread
// running. The kernel shows a resumed thread running (threadStopped) a moment
// before the agent has recorded the resume, so a test that saw the thread run
// waits for this too instead of asking once.
func agentSaysRunning(la *liveAgent, thread string) func() (bool, string) {
	return func() (bool, string) {
		return !la.isSuspended(thread), "RunControl.getState says suspended"
	}
}

// tidOf is the OS thread id of a thread context ID P<pid>.<tid>.
func tidOf(id string) int {
	_, s, _ := strings.Cut(id, ".")
	n, _ := strconv.Atoi(s)
	return n
}

// TestLiveOwnershipAttachDrop: a client attaches to a running process and
// drops; another client stays. The process is untraced and running again.
func TestLiveOwnershipAttachDrop(t *testing.T) {
	la := startLive(t)
	cmd := startBlocked(t)
	pid := cmd.Process.Pid
	c2 := la.second()
	c2.ok("Processes", "attach", "P"+strconv.Itoa(pid))
	eventually(t, "attached and stopped", func() (bool, string) {
		return tracerPid(t, pid) != 0 && taskStates(pid)[pid] == "t", fmtStates(taskStates(pid))
	})
	c2.c.Close()
	eventually(t, "released after its client dropped", released(t, pid))
	// And the agent knows: the process is no longer attached.
	var e error
	var ids []string
	la.decode("Processes", "getChildren", []any{"", true}, &e, &ids)
	for _, id := range ids {
		if id == "P"+strconv.Itoa(pid) {
			t.Errorf("still attached for the agent: %v", ids)
		}
	}
}

// TestLiveOwnershipSuspendDrop: one client attached and resumed a process;
// another suspends a thread and drops. The thread runs again, the process
// stays attached for the first client.
func TestLiveOwnershipSuspendDrop(t *testing.T) {
	la := startLive(t)
	cmd := startBlocked(t)
	pid := cmd.Process.Pid
	proc := "P" + strconv.Itoa(pid)
	la.ok("Processes", "attach", proc)
	la.ok("RunControl", "resume", proc, 0, 1)
	threads := la.threadsOf(proc)
	main := threads[0]
	eventually(t, "resumed", threadStopped(pid, pid, false))
	c2 := la.second()
	c2.ok("RunControl", "suspend", main)
	eventually(t, "suspended", threadStopped(pid, pid, true))
	c2.c.Close()
	eventually(t, "resumed after the suspending client dropped", threadStopped(pid, pid, false))
	if tp := tracerPid(t, pid); tp == 0 {
		t.Errorf("detached, though the first client holds it")
	}
	eventually(t, "the agent reports "+main+" running", agentSaysRunning(la, main))
}

// TestLiveOwnershipTwoChannels: two clients each suspend a thread of a
// process a third attached; one drops: its thread runs again, the other's
// stays stopped. Then the others drop too, and the last one's going leaves
// the process untraced and running.
func TestLiveOwnershipTwoChannels(t *testing.T) {
	la := startLive(t)
	cmd := startBlocked(t)
	pid := cmd.Process.Pid
	proc := "P" + strconv.Itoa(pid)
	la.ok("Processes", "attach", proc)
	la.ok("RunControl", "resume", proc, 0, 1)
	threads := la.threadsOf(proc)
	if len(threads) < 3 {
		t.Fatalf("threads %v", threads)
	}
	a, b := threads[1], threads[2]
	eventually(t, "resumed", threadStopped(pid, tidOf(a), false))
	c2, c3 := la.second(), la.second()
	c2.ok("RunControl", "suspend", a)
	c3.ok("RunControl", "suspend", b)
	eventually(t, "a suspended", threadStopped(pid, tidOf(a), true))
	eventually(t, "b suspended", threadStopped(pid, tidOf(b), true))
	c3.c.Close()
	eventually(t, "b resumed with its client gone", threadStopped(pid, tidOf(b), false))
	// c2 is still there: its suspend stays. (Asked after c3's close was
	// handled, so a wrong resume would have happened by now.)
	if suspended := la.isSuspended(a); !suspended || taskStates(pid)[tidOf(a)] != "t" {
		t.Fatalf("the remaining client's suspend of %s was released (suspended %v, state %s)", a, suspended, taskStates(pid)[tidOf(a)])
	}
	c2.c.Close()
	eventually(t, "a resumed with its client gone", threadStopped(pid, tidOf(a), false))
	if tp := tracerPid(t, pid); tp == 0 {
		t.Errorf("detached, though the first client holds it")
	}
	la.c.Close()
	eventually(t, "released with the last client gone", released(t, pid))
}

// TestLiveOwnershipLastChannel: the last client launched one program (stopped
// at main: a stop it did not request with a suspend) and attached another,
// planted breakpoints and drops: both are untraced and running, their code
// as the file's.
func TestLiveOwnershipLastChannel(t *testing.T) {
	la := startLive(t)
	prog := agentProg(t)
	m := la.events.mark()
	launched, _ := la.startProcess(prog, []string{"sleep"}, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	la.suspended(m, mainThread(launched))
	cmd := startBlocked(t)
	attached := "P" + strconv.Itoa(cmd.Process.Pid)
	la.ok("Processes", "attach", attached)
	m = la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "bp", "Location": "hit"})
	la.statusOf(m, "bp")
	lpid := pidOf(launched)
	st := startTime(lpid)
	t.Cleanup(func() { killIfSame(lpid, st) })
	la.c.Close()
	for _, pid := range []int{lpid, cmd.Process.Pid} {
		eventually(t, "P"+strconv.Itoa(pid)+" released with the last client gone", released(t, pid))
	}
	link := symbolAddr(t, prog, "hit")
	if got := codeByte(t, lpid, link+exeLoadBias(t, lpid, prog)); got == 0xcc {
		t.Errorf("hit() still patched in the launched program")
	}
}

// TestAgentKeepAttached: with --keep-attached a process stays attached when
// the client that attached it drops, but not stopped: the attach stop was
// that client's, and goes with it. A new client finds it attached.
func TestAgentKeepAttached(t *testing.T) {
	agent, la := agentProcess(t, "--keep-attached")
	cmd := startBlocked(t)
	pid := cmd.Process.Pid
	proc := "P" + strconv.Itoa(pid)
	la.ok("Processes", "attach", proc)
	main := mainThread(proc)
	if !la.isSuspended(main) {
		t.Fatalf("not stopped after attach")
	}
	la.c.Close()
	next := &liveAgent{t: t, addr: la.addr}
	next.c, next.events = next.dial()
	eventually(t, "the attach stop released", func() (bool, string) {
		return !next.isSuspended(main), "suspended"
	})
	eventually(t, "running", threadStopped(pid, pid, false))
	// (The tracer is the agent's tracer thread.)
	tp := tracerPid(t, pid)
	if _, err := os.Stat("/proc/" + strconv.Itoa(agent.Process.Pid) + "/task/" + strconv.Itoa(tp)); tp == 0 || err != nil {
		t.Errorf("TracerPid %d, want a thread of the agent (%d)", tp, agent.Process.Pid)
	}
	var e error
	var ids []string
	next.decode("Processes", "getChildren", []any{"", true}, &e, &ids)
	if len(ids) != 1 || ids[0] != proc {
		t.Errorf("attached processes %v, want [%s]", ids, proc)
	}
	// Without the flag the same drop detaches (TestLiveOwnershipAttachDrop).
}

// TestLiveOwnershipStepDrop: a second client suspends a running thread,
// steps it one instruction and drops while it sits at the step's end: the
// thread runs again, the process stays attached for the first client.
func TestLiveOwnershipStepDrop(t *testing.T) {
	la := startLive(t)
	cmd := startLooping(t, agentProg(t))
	pid := cmd.Process.Pid
	proc := "P" + strconv.Itoa(pid)
	main := mainThread(proc)
	la.ok("Processes", "attach", proc)
	la.ok("RunControl", "resume", proc, 0, 1)
	eventually(t, "resumed", threadStopped(pid, pid, false))
	c2 := la.second()
	c2.ok("RunControl", "suspend", main)
	if _, reason, _ := c2.resume(main, 2); reason != "Step" {
		t.Fatalf("step ended with %q", reason)
	}
	eventually(t, "stopped at the step's end", threadStopped(pid, pid, true))
	c2.c.Close()
	eventually(t, "resumed after the stepping client dropped", threadStopped(pid, pid, false))
	eventually(t, "the agent reports "+main+" running", agentSaysRunning(la, main))
	if tp := tracerPid(t, pid); tp == 0 {
		t.Errorf("detached, though the first client holds it")
	}
}
