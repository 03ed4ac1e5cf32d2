package services_test

import (
	"bufio"
	"context"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf/client"
)

// TestLiveBadInput sends every command of the debug services wrong
// arguments, unknown IDs and IDs of an exited process: each gets a reply (an
// error report, or N for what does not exist) and the agent keeps serving.
func TestLiveBadInput(t *testing.T) {
	la := startLive(t)
	// An exited process and thread, for "commands on exited contexts".
	m := la.events.mark()
	proc, _ := la.startProcess(agentProg(t), nil, runFree)
	la.exitCode(m, proc)
	thread := mainThread(proc)
	commands := map[string][]string{
		"RunControl":  {"getContext", "getChildren", "getState", "getMinState", "resume", "suspend", "terminate", "detach", "getISA"},
		"Processes":   {"getChildren", "getContext", "attach", "detach", "terminate", "signal", "getSignalList", "getSignalMask", "setSignalMask", "getEnvironment", "start"},
		"ProcessesV1": {"start", "getCapabilities", "setWinSize"},
		"Memory":      {"getContext", "getChildren", "get", "set", "fill"},
		"MemoryMap":   {"get", "set"},
		"Registers":   {"getContext", "getChildren", "get", "set", "getm", "setm"},
		"StackTrace":  {"getContext", "getChildren", "getChildrenRange"},
		"Breakpoints": {"set", "add", "change", "enable", "disable", "remove", "getIDs", "getProperties", "getStatus", "getCapabilities"},
		"Streams":     {"subscribe", "unsubscribe", "connect", "disconnect", "read", "write", "eos"},
		"LineNumbers": {"mapToSource", "mapToMemory"},
		"Symbols":     {"getContext", "getChildren", "find", "findByName", "findByAddr", "list"},
	}
	argSets := [][]any{
		nil,
		{nil},
		{42},
		{"P999999999"},
		{"P999999999.1", 0, 1},
		{proc},
		{thread},
		{thread, 0, 1},
		{proc, uint64(0x1000), 1, 4, 0},
		{"FP0." + thread},
		{"R16." + thread},
		{[]any{"FP0." + thread}},
		{map[string]any{"ID": 7}},
		{[]any{[]any{"R1." + thread, 0, 8}}, "AAAA"},
		{"x", "y", "z", "w", "v", "u", "t"},
		{thread, -1, 1 << 40},
		{"VS999999", 100},
		{"", "", nil, nil, map[string]any{"Attach": "yes"}},
		{"/", "/nonexistent/program", []string{"x"}, []string{}, map[string]any{}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	for svc, cmds := range commands {
		for _, cmd := range cmds {
			for _, args := range argSets {
				p, err := la.c.Send(svc, cmd, args...)
				if err != nil {
					t.Fatalf("%s.%s%v: %v", svc, cmd, args, err)
				}
				wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
				_, err = p.Wait(wctx)
				wcancel()
				if err != nil && !errors.Is(err, client.ErrNotRecognized) {
					if svc == "Streams" && cmd == "read" && errors.Is(err, context.DeadlineExceeded) {
						continue // a read of a live stream waits for data: not this case
					}
					t.Errorf("%s.%s%v: %v", svc, cmd, args, err)
				}
			}
		}
	}
	var echo string
	if err := la.call("Diagnostics", "echo", "still here").Decode(&echo); err != nil || echo != "still here" {
		t.Fatalf("agent after bad input: %q %v", echo, err)
	}
}

// TestAgentSignalsDetachEverything runs the `sonde agent` binary, has it
// launch one program (stopped at main) and attach to another, plant
// breakpoints in both, then sends SIGTERM (and, in a second run, SIGINT): the
// agent exits 0, both programs are untraced, not stopped, and their code is
// the file's again.
func TestAgentSignalsDetachEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sonde binary")
	}
	prog := agentProg(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) { agentSignalRun(t, prog, sig) })
	}
}

func agentSignalRun(t *testing.T, prog string, sig syscall.Signal) {
	agent, la := agentProcess(t)

	// One program launched and stopped at main, one attached while running.
	m := la.events.mark()
	launched, _ := la.startProcess(prog, []string{"sleep"}, map[string]any{"StopAtEntry": false, "StopAtMain": true})
	la.suspended(m, mainThread(launched))
	running := exec.Command(prog, "sleep")
	rout, _ := running.StdoutPipe()
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { running.Process.Kill(); running.Wait() })
	bufio.NewReader(rout).ReadString('\n')
	attached := "P" + strconv.Itoa(running.Process.Pid)
	la.ok("Processes", "attach", attached)
	// Breakpoints the programs never reach, planted in both.
	fns := []string{"bottom", "hit", "compute"}
	for _, fn := range fns {
		m := la.events.mark()
		la.ok("Breakpoints", "add", map[string]any{"ID": fn, "Location": fn})
		if inst, _ := la.statusOf(m, fn); len(inst) != 2 {
			t.Fatalf("%s planted as %v, want one per process", fn, inst)
		}
	}
	// A conditional breakpoint planted as a probe: a jump into a code cache.
	m = la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "probe-add", "Location": "add", "Condition": "a == 12345 && b > 0"})
	if inst, _ := la.statusOf(m, "probe-add"); len(inst) != 2 || inst[0]["Probe"] != true || inst[1]["Probe"] != true {
		t.Fatalf("probe-add planted as %v, want a probe per process", inst)
	}
	pids := []int{pidOf(launched), running.Process.Pid}
	// The launched program is the agent's child: once the agent is gone and
	// the program ended, its pid may be another process's. Signals go
	// through a pidfd opened now, while it is certainly the program.
	launchedProc, err := os.FindProcess(pids[0])
	if err != nil {
		t.Fatal(err)
	}
	procs := []*os.Process{launchedProc, running.Process}
	for _, pid := range pids {
		if n := anonExec(t, pid); n == 0 {
			t.Fatalf("pid %d: no code cache mapped", pid)
		}
	}
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, pid := range pids {
		for _, fn := range fns {
			if b := codeByte(t, pid, symbolAddr(t, prog, fn)+exeLoadBias(t, pid, prog)); b != 0xcc {
				t.Fatalf("%s not planted in %d", fn, pid)
			}
		}
	}
	if err := agent.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- agent.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("agent exit after %v: %v", sig, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("agent still running 20s after %v", sig)
	}
	for i, pid := range pids {
		// The launched program's stdout was a pipe to the agent: with the
		// agent gone, its first write ends it with SIGPIPE, maybe while we
		// look. It is untraced either way; what is there to check is
		// checked, then it is frozen for the byte checks.
		if i == 0 && !mapsFile(pid, prog) {
			continue
		}
		if tp := tracerPid(t, pid); tp != 0 {
			t.Errorf("pid %d still traced by %d", pid, tp)
		}
		if st := procState(t, pid); st == "t" || st == "T" {
			t.Errorf("pid %d left stopped (%s)", pid, st)
		}
		if i == 0 && !freeze(procs[i]) {
			continue
		}
		for _, fn := range append(fns, "add") {
			link := symbolAddr(t, prog, fn)
			for k := uint64(0); k < 8; k++ {
				got := codeByte(t, pid, link+k+exeLoadBias(t, pid, prog))
				if want := fileByte(t, f, link+k); got != want {
					t.Errorf("pid %d: byte %d of %s is %#x, the file has %#x", pid, k, fn, got, want)
				}
			}
		}
		if n := anonExec(t, pid); n != 0 {
			t.Errorf("pid %d: %d anonymous executable mappings left (code cache, scratch area)", pid, n)
		}
	}
	launchedProc.Kill()
}

// fileByte is the byte of an executable at a link-time address.
func fileByte(t *testing.T, f *elf.File, va uint64) byte {
	t.Helper()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && va >= p.Vaddr && va < p.Vaddr+p.Filesz {
			buf := make([]byte, 1)
			if _, err := p.ReadAt(buf, int64(va-p.Vaddr)); err != nil {
				t.Fatal(err)
			}
			return buf[0]
		}
	}
	t.Fatalf("no loaded byte at %#x", va)
	return 0
}

// symbolAddr is a function's link-time address in an ELF file.
func symbolAddr(t *testing.T, path, name string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	for _, s := range syms {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("%s has no %s", path, name)
	return 0
}

// loadBias is where a PIE executable is loaded in pid (its first mapping).
func exeLoadBias(t *testing.T, pid int, path string) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasSuffix(l, path) {
			lo, _, _ := strings.Cut(l, "-")
			v, _ := strconv.ParseUint(lo, 16, 64)
			return v
		}
	}
	t.Fatalf("%s not mapped in %d", path, pid)
	return 0
}

// mapsFile reports whether path is mapped in process pid (false once the
// process is gone).
// freeze stops p with SIGSTOP and waits until it is stopped; false if it
// is gone (or a zombie) instead. (An os.Process signals through a pidfd: a
// gone process's pid may be another's.)
func freeze(p *os.Process) bool {
	pid := p.Pid
	if p.Signal(syscall.SIGSTOP) != nil {
		return false
	}
	for i := 0; i < 500; i++ {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		switch {
		case len(f) == 0 || f[0] == "Z" || f[0] == "X":
			return false
		case f[0] == "T":
			return true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

func mapsFile(pid int, path string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	return err == nil && strings.Contains(string(b), path)
}

// anonExec counts a process's anonymous executable mappings: sonde's code
// caches and scratch areas (the vDSO and vsyscall pages have names).
func anonExec(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) == 5 && strings.Contains(f[1], "x") {
			n++
		}
	}
	return n
}
