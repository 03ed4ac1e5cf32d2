package services_test

import (
	"bufio"
	"encoding/base64"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/tcf"
)

var runFree = map[string]any{"StopAtEntry": false, "StopAtMain": false}

// readStream reads a stream until end of stream and returns everything.
func (la *liveAgent) readStream(id string) string {
	la.t.Helper()
	var out []byte
	for i := 0; i < 1000; i++ {
		var data []byte
		var e error
		var lost int64
		var eos bool
		la.decode("Streams", "read", []any{id, 4096}, &data, &e, &lost, &eos)
		if lost != 0 {
			la.t.Errorf("stream %s lost %d bytes", id, lost)
		}
		out = append(out, data...)
		if eos {
			return string(out)
		}
	}
	la.t.Fatalf("stream %s never ended; got %q", id, out)
	return ""
}

// exitCode waits for Processes.exited of proc from position from on.
func (la *liveAgent) exitCode(from int, proc string) int64 {
	la.t.Helper()
	e, _ := la.events.wait(la.t, from, "Processes.exited of "+proc, is("Processes", "exited", proc))
	n, _ := strconv.ParseInt(e.Raw[1], 10, 64)
	return n
}

// TestLiveStreamsNothingLost: a program that prints and exits before any
// client connects to its streams; everything it wrote is still read.
func TestLiveStreamsNothingLost(t *testing.T) {
	prog := agentProg(t)
	la := startLive(t)
	la.ok("Streams", "subscribe", "ProcessesV1")
	m := la.events.mark()
	proc, props := la.startProcess(prog, nil, runFree)
	if code := la.exitCode(m, proc); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	out, _ := props.String("StdOutID")
	if got := la.readStream(out); got != "start\nresult 27\n" {
		t.Errorf("stdout %q", got)
	}
	errID, _ := props.String("StdErrID")
	if got := la.readStream(errID); got != "" {
		t.Errorf("stderr %q", got)
	}
	// The streams were announced to the subscriber, with the process ID.
	var created []string
	for _, e := range la.events.since(m) {
		if e.Service == "Streams" && e.Name == "created" {
			checkArity(t, e)
			if e.str(0) != "ProcessesV1" || e.str(2) != proc {
				t.Errorf("created %v", e)
			}
			created = append(created, e.str(1))
		}
	}
	in, _ := props.String("StdInID")
	if !slices.Contains(created, out) || !slices.Contains(created, errID) || !slices.Contains(created, in) {
		t.Errorf("Streams.created for %v, want stdin %s stdout %s stderr %s", created, in, out, errID)
	}
	// A stream read to its end is disposed of.
	la.events.wait(t, m, "Streams.disposed of "+out, func(e event) bool {
		return e.Service == "Streams" && e.Name == "disposed" && e.str(1) == out
	})
	var data []byte
	var e error
	la.call("Streams", "read", out, 10).Decode(&data, &e, nil, nil)
	if errCode(t, e) != tcf.CodeInvalidContext {
		t.Errorf("read of a disposed stream: %v", e)
	}
}

// TestLiveStdin: Streams.write and eos feed the program's stdin.
func TestLiveStdin(t *testing.T) {
	prog := agentProg(t)
	la := startLive(t)
	m := la.events.mark()
	proc, props := la.startProcess(prog, []string{"echo"}, runFree)
	in, _ := props.String("StdInID")
	out, _ := props.String("StdOutID")
	msg := "hello through TCF\n"
	la.ok("Streams", "write", in, len(msg), base64.StdEncoding.EncodeToString([]byte(msg)))
	la.ok("Streams", "eos", in)
	if code := la.exitCode(m, proc); code != 7 {
		t.Errorf("exit code %d, want 7", code)
	}
	if got := la.readStream(out); got != "start\n"+msg {
		t.Errorf("stdout %q", got)
	}
}

// TestLiveUntracedAndEnvironment: Attach false runs the program without
// debugging it (no RunControl context) with exactly the environment given;
// Processes.getEnvironment is the agent's own.
func TestLiveUntracedAndEnvironment(t *testing.T) {
	prog := agentProg(t)
	la := startLive(t)
	var e error
	var env []string
	la.decode("Processes", "getEnvironment", nil, &e, &env)
	if !slices.Equal(env, os.Environ()) {
		t.Errorf("getEnvironment: %d entries, the agent has %d", len(env), len(os.Environ()))
	}
	m := la.events.mark()
	var props tcf.Props
	la.decode("ProcessesV1", "start", []any{"", prog, []string{prog, "env"}, []string{"SONDE_A=1", "SONDE_B=two"},
		map[string]any{"Attach": false}}, &e, &props)
	proc, _ := props.String("ID")
	if props["Attached"] != false {
		t.Errorf("Attached %v", props["Attached"])
	}
	if code := la.exitCode(m, proc); code != 0 {
		t.Errorf("exit code %d", code)
	}
	out, _ := props.String("StdOutID")
	if got := la.readStream(out); got != "start\nSONDE_A=1\nSONDE_B=two\n" {
		t.Errorf("stdout %q", got)
	}
	for _, ev := range la.events.since(m) {
		if ev.Service == "RunControl" {
			t.Errorf("untraced process gave %v", ev)
		}
	}
}

// TestLiveUseTerminal: the program's stdio is a pty; its output is one stream.
func TestLiveUseTerminal(t *testing.T) {
	prog := agentProg(t)
	la := startLive(t)
	m := la.events.mark()
	proc, props := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": false, "UseTerminal": true})
	out, _ := props.String("StdOutID")
	la.exitCode(m, proc)
	if got := la.readStream(out); got != "start\r\nresult 27\r\n" {
		t.Errorf("terminal output %q", got)
	}
}

// TestLiveStopAtEntry: the first stop is at the dynamic loader's entry,
// reason Suspended with SIGTRAP, as the C agent reports it.
func TestLiveStopAtEntry(t *testing.T) {
	prog := agentProg(t)
	la := startLive(t)
	m := la.events.mark()
	proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": true, "StopAtMain": false})
	thread := mainThread(proc)
	pc, reason, params, _ := la.suspended(m, thread)
	if reason != "Suspended" || num(params["Signal"]) != 5 {
		t.Errorf("entry stop: %q %v", reason, params)
	}
	var e error
	var regions []map[string]any
	la.decode("MemoryMap", "get", []any{proc}, &e, &regions)
	inLoader := false
	for _, r := range regions {
		name, _ := r["FileName"].(string)
		if pc >= num(r["Addr"]) && pc < num(r["Addr"])+num(r["Size"]) && strings.Contains(name, "ld-linux") {
			inLoader = true
		}
	}
	if !inLoader {
		t.Errorf("entry pc 0x%x is not in the dynamic loader: %v", pc, regions)
	}
	m = la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	if code := la.exitCode(m, proc); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// TestLiveAttachDetach attaches to a running process, reads its memory, and
// detaches: the process runs on, untraced.
func TestLiveAttachDetach(t *testing.T) {
	prog := agentProg(t)
	la := startLive(t)
	cmd := exec.Command(prog, "sleep")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(stdout)
	r.ReadString('\n')
	line, _ := r.ReadString('\n')
	addr, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(line, "ready")), "0x"), 16, 64)
	if err != nil {
		t.Fatalf("ready line %q", line)
	}
	pid := cmd.Process.Pid
	proc := "P" + strconv.Itoa(pid)
	m := la.events.mark()
	la.ok("Processes", "attach", proc)
	if tp := tracerPid(t, pid); !isOurThread(tp) {
		t.Errorf("TracerPid %d after attach is not a thread of the agent (pid %d)", tp, os.Getpid())
	}
	_, reason, _, _ := la.suspended(m, mainThread(proc))
	if reason != "Suspended" {
		t.Errorf("attach stop reason %q", reason)
	}
	seq := names(la.events.since(m), nil)
	if len(seq) < 4 || !slices.Equal(seq[:4], []string{"RunControl.contextAdded", "Memory.contextAdded", "RunControl.contextAdded", "RunControl.contextSuspended"}) {
		t.Errorf("attach events %v", seq)
	}
	var data []byte
	var e error
	la.decode("Memory", "get", []any{proc, addr, 1, 8, 0}, &data, &e, nil)
	if len(data) != 8 || data[0] != 0x88 || data[7] != 0x11 {
		t.Errorf("agent_global read %x", data)
	}
	var attached bool
	var props tcf.Props
	la.decode("Processes", "getContext", []any{proc}, &e, &props)
	if attached, _ = props.Bool("Attached"); !attached {
		t.Errorf("getContext after attach: %v", props)
	}
	m = la.events.mark()
	la.ok("Processes", "detach", proc)
	la.events.wait(t, m, "contextRemoved of "+proc, is("RunControl", "contextRemoved", proc))
	if tp := tracerPid(t, pid); tp != 0 {
		t.Errorf("TracerPid %d after detach", tp)
	}
	if st := procState(t, pid); st != "S" && st != "R" {
		t.Errorf("state %q after detach, want running or sleeping", st)
	}
	// Detaching again, or attaching to nothing, is an error reply.
	var e2 error
	la.call("Processes", "detach", proc).Decode(&e2)
	if errCode(t, e2) == 0 {
		t.Errorf("second detach succeeded")
	}
	la.call("Processes", "attach", "P999999999").Decode(&e2)
	if errCode(t, e2) == 0 {
		t.Errorf("attach to no process succeeded")
	}
}

func procStatus(t testing.TB, pid int, field string) string {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// isOurThread reports whether tid is a thread of this process (the agent's
// tracer thread shows as TracerPid).
func isOurThread(tid int) bool {
	_, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid))
	return tid != 0 && err == nil
}

func tracerPid(t testing.TB, pid int) int {
	n, _ := strconv.Atoi(procStatus(t, pid, "TracerPid"))
	return n
}

func procState(t testing.TB, pid int) string {
	s := procStatus(t, pid, "State")
	if s == "" {
		return ""
	}
	return s[:1]
}

// TestLiveAttachChildren: with AttachChildren a forked child becomes a
// process of its own (CreatorID the parent), reported when it exits; without
// it the child is not debugged.
func TestLiveAttachChildren(t *testing.T) {
	prog := agentProg(t)
	for _, follow := range []bool{true, false} {
		t.Run(strconv.FormatBool(follow), func(t *testing.T) {
			la := startLive(t)
			m := la.events.mark()
			proc, props := la.startProcess(prog, []string{"fork"}, map[string]any{"StopAtEntry": false, "StopAtMain": false, "AttachChildren": follow})
			if code := la.exitCode(m, proc); code != 0 {
				t.Errorf("exit code %d", code)
			}
			out, _ := props.String("StdOutID")
			if got := la.readStream(out); got != "start\nchild\nparent 5\n" {
				t.Errorf("stdout %q", got)
			}
			var children []string
			for _, e := range la.events.since(m) {
				if e.Service == "RunControl" && e.Name == "contextAdded" {
					for _, c := range e.Args[0].([]any) {
						p := c.(map[string]any)
						if p["IsContainer"] == true && p["ID"] != proc {
							children = append(children, p["ID"].(string))
							if p["CreatorID"] != proc {
								t.Errorf("child %v: CreatorID %v, want %s", p["ID"], p["CreatorID"], proc)
							}
						}
					}
				}
			}
			if follow {
				if len(children) != 1 {
					t.Fatalf("children added: %v\n%s", children, dump(la.events.since(m)))
				}
				if code := la.exitCode(m, children[0]); code != 5 {
					t.Errorf("child exit code %d", code)
				}
			} else if len(children) != 0 {
				t.Errorf("children debugged without AttachChildren: %v", children)
			}
		})
	}
}

// TestLiveSignals: a signal outside the don't-stop set stops the program
// (reason "Signal 10") and is delivered on resume; in the set it does not
// stop; in don't-pass it is not delivered.
func TestLiveSignals(t *testing.T) {
	prog := agentProg(t)
	la := startLive(t)
	const usr1 = 10
	run := func(dontStop, dontPass uint64, wantStop bool, wantOut string) {
		t.Helper()
		m := la.events.mark()
		proc, props := la.startProcess(prog, []string{"signal"}, map[string]any{"StopAtEntry": true, "StopAtMain": false})
		thread := mainThread(proc)
		la.suspended(m, thread)
		var e error
		var ds, dp, pend uint64
		la.decode("Processes", "getSignalMask", []any{proc}, &e, &ds, &dp, &pend)
		la.ok("Processes", "setSignalMask", proc, ds|dontStop, dp|dontPass)
		la.decode("Processes", "getSignalMask", []any{proc}, &e, &ds, &dp, &pend)
		if ds&dontStop != dontStop || dp&dontPass != dontPass {
			t.Errorf("masks %x %x after set", ds, dp)
		}
		m = la.events.mark()
		la.ok("RunControl", "resume", thread, 0, 1)
		if wantStop {
			_, reason, params, _ := la.suspended(m, thread)
			if reason != "Signal 10" || num(params["Signal"]) != usr1 || params["SignalName"] != "SIGUSR1" {
				t.Errorf("signal stop %q %v", reason, params)
			}
			la.ok("RunControl", "resume", thread, 0, 1)
		}
		if code := la.exitCode(m, proc); code != 3 {
			t.Errorf("exit code %d", code)
		}
		out, _ := props.String("StdOutID")
		if got := la.readStream(out); got != "start\n"+wantOut+"\n" {
			t.Errorf("stdout %q, want %q", got, wantOut)
		}
		for _, e := range la.events.since(m) {
			if e.Name == "contextSuspended" && !wantStop {
				t.Errorf("stopped although in don't-stop: %v", e)
			}
		}
	}
	run(0, 0, true, "counter 1000")
	run(1<<usr1, 0, false, "counter 1000")
	run(1<<usr1, 1<<usr1, false, "counter 0")
	var e error
	var list []map[string]any
	la.decode("Processes", "getSignalList", []any{""}, &e, &list)
	if len(list) < 31 || list[usr1-1]["Name"] != "SIGUSR1" {
		t.Errorf("signal list %v", list[:min(len(list), 12)])
	}
}

// TestLiveTerminate: terminating a process stopped at main reports exit code
// -9, then the contexts go.
func TestLiveTerminate(t *testing.T) {
	prog := agentProg(t)
	la := startLive(t)
	m := la.events.mark()
	proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	la.suspended(m, mainThread(proc))
	m = la.events.mark()
	la.ok("RunControl", "terminate", proc)
	if code := la.exitCode(m, proc); code != -9 {
		t.Errorf("exit code %d, want -9", code)
	}
	la.events.wait(t, m, "Memory.contextRemoved", is("Memory", "contextRemoved", proc))
	for _, e := range la.events.since(m) {
		checkArity(t, e)
	}
}

// TestLiveSuspendResumeThreads suspends and resumes a process of five busy
// threads as a container.
func TestLiveSuspendResumeThreads(t *testing.T) {
	prog := agentProg(t)
	la := startLive(t)
	m0 := la.events.mark()
	proc, _ := la.startProcess(prog, []string{"threads"}, runFree)
	var ids []string
	var e error
	deadline := time.Now().Add(10 * time.Second)
	for len(ids) < 5 && time.Now().Before(deadline) {
		la.decode("RunControl", "getChildren", []any{proc}, &e, &ids)
		time.Sleep(10 * time.Millisecond)
	}
	if len(ids) != 5 {
		t.Fatalf("threads %v", ids)
	}
	// Each new thread was announced with its process as parent and the main
	// thread as creator. The client hands events over on its own goroutine,
	// so an announcement can reach the log after the reply that listed the
	// thread: wait for each one.
	for _, id := range ids[1:] {
		if id == mainThread(proc) {
			continue
		}
		e, _ := la.events.wait(t, m0, "contextAdded for thread "+id, func(e event) bool {
			return e.Service == "RunControl" && e.Name == "contextAdded" && addedContext(e, id) != nil
		})
		checkArity(t, e)
		p := addedContext(e, id)
		if p["ParentID"] != proc || p["CreatorID"] != mainThread(proc) || p["HasState"] != true {
			t.Errorf("thread %s: ParentID %v CreatorID %v HasState %v", id, p["ParentID"], p["CreatorID"], p["HasState"])
		}
	}
	for round := 0; round < 3; round++ {
		m := la.events.mark()
		la.ok("RunControl", "suspend", proc)
		for _, id := range ids {
			la.suspended(m, id)
			var susp bool
			la.decode("RunControl", "getState", []any{id}, &e, &susp, nil, nil, nil)
			if !susp {
				t.Errorf("%s not suspended", id)
			}
		}
		var err2 error
		la.call("RunControl", "suspend", ids[0]).Decode(&err2)
		if errCode(t, err2) != tcf.CodeAlreadyStopped {
			t.Errorf("suspend of a stopped thread: %v", err2)
		}
		m = la.events.mark()
		la.ok("RunControl", "resume", proc, 0, 1)
		for _, id := range ids {
			la.events.wait(t, m, "contextResumed of "+id, is("RunControl", "contextResumed", id))
			var susp bool
			la.decode("RunControl", "getState", []any{id}, &e, &susp, nil, nil, nil)
			if susp {
				t.Errorf("%s still suspended", id)
			}
		}
	}
	m := la.events.mark()
	la.ok("RunControl", "terminate", proc)
	la.exitCode(m, proc)
	la.events.wait(t, m, "Memory.contextRemoved", is("Memory", "contextRemoved", proc))
	// Every thread is removed, the main thread last, just before its process.
	var removed []string
	for _, e := range la.events.since(m) {
		checkArity(t, e)
		if e.Service == "RunControl" && e.Name == "contextRemoved" {
			removed = append(removed, anyStrings(e.Args[0])...)
		}
	}
	if len(removed) != 6 || removed[4] != mainThread(proc) || removed[5] != proc {
		t.Errorf("contextRemoved order %v", removed)
	}
}

// TestLiveDlopenMemoryMapChanged: a breakpoint on a function of a library the
// program loads later is planted when it loads; MemoryMap.changed is sent.
func TestLiveDlopenMemoryMapChanged(t *testing.T) {
	prog := agentProg(t)
	lib := testprog.Build(t, testprog.Spec{Sources: []string{"agent_lib.c"}, Flags: []string{"-O0", "-shared", "-fPIC"}, Name: "libagent_lib.so"})
	la := startLive(t)
	m := la.events.mark()
	proc, _ := la.startProcess(prog, []string{"dlopen", lib}, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	la.suspended(m, thread)
	la.ok("Breakpoints", "add", map[string]any{"ID": "in-lib", "Location": "agent_lib_add"})
	m = la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	pc, reason, params, _ := la.suspended(m, thread)
	if reason != "Breakpoint" || !slices.Equal(anyStrings(params["BPs"]), []string{"in-lib"}) || la.funcAt(thread, pc) != "agent_lib_add" {
		t.Errorf("stop %q %v in %q", reason, params, la.funcAt(thread, pc))
	}
	la.events.wait(t, m, "MemoryMap.changed", is("MemoryMap", "changed", proc))
	var e error
	var regions []map[string]any
	la.decode("MemoryMap", "get", []any{proc}, &e, &regions)
	found := false
	for _, r := range regions {
		if r["FileName"] == lib {
			found = true
		}
	}
	if !found {
		t.Errorf("MemoryMap.get has no %s", lib)
	}
	m = la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	if code := la.exitCode(m, proc); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// TestLiveExecBreakpointsBeforeStart: breakpoints set before the program
// execs another one are planted in the new program before any of it runs:
// on fflush, in a libc the new program loads after the exec, and on compute,
// which its main calls right after that fflush.
func TestLiveExecBreakpointsBeforeStart(t *testing.T) {
	prog := agentProg(t)
	la := startLive(t)
	proc, thread := la.launchStopped(prog, []string{"exec", prog}, nil)
	la.ok("Breakpoints", "add", map[string]any{"ID": "fflush", "Location": "fflush"})
	la.ok("Breakpoints", "add", map[string]any{"ID": "compute", "Location": "compute"})
	// The first program's fflush, then the second's, then its compute.
	for i, want := range []string{"fflush", "fflush", "compute"} {
		pc, reason, params := la.resume(thread, 0)
		if reason != "Breakpoint" || !slices.Equal(anyStrings(params["BPs"]), []string{want}) {
			t.Fatalf("stop %d: %q %v in %q, want breakpoint %s", i, reason, params, la.funcAt(thread, pc), want)
		}
	}
	la.ok("Breakpoints", "remove", []string{"fflush", "compute"})
	if code := la.runToExit(thread, proc); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// TestLiveStopAtMainRust: StopAtMain stops a Rust program in its own main
// (crate::main, which DWARF marks as the main subprogram), as gdb's start
// does, not in the runtime's shim the ELF symbol main names.
func TestLiveStopAtMainRust(t *testing.T) {
	prog := testprog.BuildRust(t, "rust_main.rs", "rust_main", "-C", "opt-level=0")
	la := startLive(t)
	m := la.events.mark()
	proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	pc, reason, _, _ := la.suspended(m, thread)
	if f := la.funcAt(thread, pc); reason != "Suspended" || f != "rust_main::main" {
		t.Fatalf("StopAtMain: %q in %q, want rust_main::main", reason, f)
	}
	if file, _ := la.lineAt(thread, pc); file != "rust_main.rs" {
		t.Errorf("StopAtMain at %s, want a line of rust_main.rs", file)
	}
	if code := la.runToExit(thread, proc); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// TestLiveStopAtMainStripped: a program without symbols has no main to stop
// at; StopAtMain then stops it at its entry (reported as StopAtEntry's
// stop) instead of letting it run.
func TestLiveStopAtMainStripped(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"agent_prog.c"}, Flags: []string{"-g0", "-s"}, Name: "agent_prog_stripped"})
	la := startLive(t)
	m := la.events.mark()
	proc, _ := la.startProcess(prog, nil, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	thread := mainThread(proc)
	_, reason, _, _ := la.suspended(m, thread)
	if reason != "Suspended" {
		t.Fatalf("first stop %q", reason)
	}
	var e error
	var susp bool
	la.decode("RunControl", "getState", []any{thread}, &e, &susp, nil, nil, nil)
	if !susp {
		t.Fatalf("not suspended after the launch")
	}
	if code := la.runToExit(thread, proc); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// TestLiveAttachChildrenBreakpointsBeforeRun: with AttachChildren, a fork
// child has the client's breakpoints planted before it runs: its first
// call, puts right after fork, stops.
func TestLiveAttachChildrenBreakpointsBeforeRun(t *testing.T) {
	prog := agentProg(t)
	la := startLive(t)
	proc, thread := la.launchStopped(prog, []string{"fork"}, map[string]any{"AttachChildren": true})
	la.ok("Breakpoints", "add", map[string]any{"ID": "puts", "Location": "puts"})
	// The parent's puts("start"), then the child's puts("child").
	if _, reason, _ := la.resume(thread, 0); reason != "Breakpoint" {
		t.Fatalf("parent: %q", reason)
	}
	m := la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	e, _ := la.events.wait(t, m, "the child's stop", func(e event) bool {
		return e.Name == "contextSuspended" && e.str(0) != thread
	})
	if e.str(2) != "Breakpoint" {
		t.Fatalf("child stopped with %q", e.str(2))
	}
	la.ok("Breakpoints", "remove", []string{"puts"})
	child := e.str(0)
	m = la.events.mark()
	la.ok("RunControl", "resume", child, 0, 1)
	childProc := child[:strings.Index(child, ".")]
	if code := la.exitCode(m, childProc); code != 5 {
		t.Errorf("child exit code %d, want 5", code)
	}
	if code := la.exitCode(m, proc); code != 0 {
		t.Errorf("parent exit code %d", code)
	}
}

// addedContext returns the properties of context id in a contextAdded event,
// or nil when the event does not announce it.
func addedContext(e event, id string) map[string]any {
	if len(e.Args) == 0 {
		return nil
	}
	list, _ := e.Args[0].([]any)
	for _, c := range list {
		if p, ok := c.(map[string]any); ok && p["ID"] == id {
			return p
		}
	}
	return nil
}
