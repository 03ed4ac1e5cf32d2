package services_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/tcftest"
	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/tcf/client"
)

// Benchmarks of the debug services against real processes, through the Go
// client over loopback TCP (figures and commands: bench/tcf/BENCHMARKS.md).

// BenchmarkMemoryGet1MiB reads 1 MiB of a stopped process with Memory.get.
func BenchmarkMemoryGet1MiB(b *testing.B) {
	la := startLive(b)
	m := la.events.mark()
	proc, props := la.startProcess(agentProg(b), []string{"big"}, runFree)
	out, _ := props.String("StdOutID")
	for got := ""; !strings.Contains(got, "ready"); {
		var data []byte
		var e error
		la.decode("Streams", "read", []any{out, 4096}, &data, &e, nil, nil)
		got += string(data)
	}
	la.ok("RunControl", "suspend", proc)
	la.suspended(m, mainThread(proc))
	big := la.symbolAddress(mainThread(proc), "agent_big")
	const size = 1 << 20
	check := func() {
		var data []byte
		var e error
		la.decode("Memory", "get", []any{proc, big, 1, size, 0}, &data, &e, nil)
		if len(data) != size || data[1] != 7 || data[size-1] != byte(((size-1)*7)&0xff) {
			b.Fatalf("read %d bytes, wrong contents", len(data))
		}
	}
	check()
	// base64 (what the Python client gets) and raw ZeroCopy blocks (Java
	// clients, sonde's Go client when it lists ZeroCopy).
	zc, err := client.Dial(context.Background(), la.addr, client.Options{Services: []string{"ZeroCopy"}})
	if err != nil {
		b.Fatal(err)
	}
	defer zc.Close()
	for _, c := range []struct {
		name string
		c    *client.Client
	}{{"base64", la.c}, {"zerocopy", zc}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				r, err := c.c.Call(ctx, "Memory", "get", proc, big, 1, size, 0)
				if err != nil {
					b.Fatal(err)
				}
				var data []byte
				if err := r.Decode(&data, nil, nil); err != nil || len(data) != size {
					b.Fatalf("%d bytes, %v", len(data), err)
				}
			}
		})
	}
}

// symbolAddress finds a global's address with Symbols.find.
func (la *liveAgent) symbolAddress(thread, name string) uint64 {
	la.t.Helper()
	var e error
	var id string
	la.decode("Symbols", "find", []any{thread, 0, name}, &e, &id)
	var props map[string]any
	la.decode("Symbols", "getContext", []any{id}, &e, &props)
	return num(props["Address"])
}

// BenchmarkBreakpointHitResume: a breakpoint hit and the resume after it, as
// a client does it: resume, wait for contextSuspended, resume again.
func BenchmarkBreakpointHitResume(b *testing.B) {
	la := startLive(b)
	_, thread := la.stoppedAtMain("loop", "1000000000")
	la.ok("Breakpoints", "add", map[string]any{"ID": "bench", "Location": "hit"})
	stops := make(chan struct{}, 1)
	la.c.OnEvent("RunControl", "contextSuspended", func(client.Event) { stops <- struct{}{} })
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := la.c.Call(ctx, "RunControl", "resume", thread, 0, 1); err != nil {
			b.Fatal(err)
		}
		select {
		case <-stops:
		case <-time.After(10 * time.Second):
			b.Fatal("no stop")
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "hits/s")
}

// BenchmarkStack57 fetches a 57-frame stack with names and lines the way a
// client builds it, pipelining every request of a round: getChildren;
// getContext of all frames; Symbols.findByAddr and LineNumbers.mapToSource
// per frame; Symbols.getContext per symbol. "warm" repeats it at one stop
// (the agent's caches hold the walk); "afterStop" first makes the thread
// run to the breakpoint again (outside the timer), so the stack is walked
// again each time.
func BenchmarkStack57(b *testing.B) {
	la := startLive(b)
	// hit, bottom, 51 deep, main and libc's three: 57 frames.
	_, thread := la.stoppedAtMain("deep", "50", "loop")
	la.ok("Breakpoints", "add", map[string]any{"ID": "hit", "Location": "hit"})
	la.resume(thread, 0)
	names := tcftest.StackRound(b, la.c, thread)
	if len(names) != 57 || names[0] != "hit" || names[1] != "bottom" || names[53] != "main" {
		b.Fatalf("stack %v", names)
	}
	b.Run("warm", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			tcftest.StackRound(b, la.c, thread)
		}
	})
	b.Run("afterStop", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			la.resume(thread, 0) // to the next hit(): same depth
			b.StartTimer()
			tcftest.StackRound(b, la.c, thread)
		}
	})
}

// BenchmarkStack57Process is BenchmarkStack57 against `sonde agent` running
// as its own process (built with go build into a temporary directory), so
// that the agent's CPU time can be told apart from the client's: besides the
// wall time per round it reports agent-CPU-µs/round, the on-CPU time of
// all the agent's threads during the timed rounds (the sum of
// /proc/PID/task/*/schedstat, in ns), and client-CPU-µs/round, the
// benchmark process's own (getrusage). In afterStop, the agent's CPU is
// sampled around each round only, so the resume and the breakpoint hit
// before it are not counted (agent-CPU-µs/stop+round counts them).
func BenchmarkStack57Process(b *testing.B) {
	agent := testprog.StartAgent(b) // kills the program it launches when it stops
	la := &liveAgent{t: b, addr: agent.Addr}
	la.c, la.events = la.dial()
	_, thread := la.stoppedAtMain("deep", "50", "loop")
	la.ok("Breakpoints", "add", map[string]any{"ID": "hit", "Location": "hit"})
	la.resume(thread, 0)
	if names := tcftest.StackRound(b, la.c, thread); len(names) != 57 || names[0] != "hit" || names[53] != "main" {
		b.Fatalf("stack %v", names)
	}
	pid := agent.Cmd.Process.Pid
	report := func(b *testing.B, agentNS, clientNS int64) {
		b.ReportMetric(float64(agentNS)/1e3/float64(b.N), "agent-CPU-µs/round")
		b.ReportMetric(float64(clientNS)/1e3/float64(b.N), "client-CPU-µs/round")
	}
	b.Run("warm", func(b *testing.B) {
		a0, c0 := taskCPU(b, pid), selfCPU()
		r0, w0 := syscallCounts(b, pid)
		cr0, cw0 := syscallCounts(b, os.Getpid())
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			tcftest.StackRound(b, la.c, thread)
		}
		b.StopTimer()
		report(b, taskCPU(b, pid)-a0, selfCPU()-c0)
		// How the 173 requests reached the agent: socket reads and writes
		// per round (at one stop the agent makes no other I/O calls).
		r1, w1 := syscallCounts(b, pid)
		b.ReportMetric(float64(r1-r0)/float64(b.N), "agent-reads/round")
		b.ReportMetric(float64(w1-w0)/float64(b.N), "agent-writes/round")
		cr1, cw1 := syscallCounts(b, os.Getpid())
		b.ReportMetric(float64(cr1-cr0)/float64(b.N), "client-reads/round")
		b.ReportMetric(float64(cw1-cw0)/float64(b.N), "client-writes/round")
	})
	b.Run("afterStop", func(b *testing.B) {
		var agentNS, clientNS, cycleNS int64
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			s0 := taskCPU(b, pid)
			la.resume(thread, 0)
			a0, c0 := taskCPU(b, pid), selfCPU()
			b.StartTimer()
			tcftest.StackRound(b, la.c, thread)
			b.StopTimer()
			a1 := taskCPU(b, pid)
			agentNS += a1 - a0
			cycleNS += a1 - s0
			clientNS += selfCPU() - c0
		}
		report(b, agentNS, clientNS)
		// Everything the agent does for one stop and its round: the resume,
		// the breakpoint hit, its events, the walk and the round.
		b.ReportMetric(float64(cycleNS)/1e3/float64(b.N), "agent-CPU-µs/stop+round")
	})
}

// taskCPU is the on-CPU time in ns of all threads of process pid, from the
// first field of /proc/PID/task/TID/schedstat (exact, unlike the clock ticks
// of /proc/PID/stat).
func taskCPU(b *testing.B, pid int) int64 {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var sum int64
	for _, t := range tasks {
		data, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			b.Fatalf("schedstat %q", data)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			b.Fatalf("schedstat %q: %v", data, err)
		}
		sum += n
	}
	return sum
}

// syscallCounts returns the read and write system calls process pid made
// so far (syscr and syscw of /proc/PID/io).
func syscallCounts(b *testing.B, pid int) (reads, writes int64) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "syscr":
			reads = n
		case "syscw":
			writes = n
		}
	}
	return reads, writes
}

// selfCPU is this process's user and system CPU time in ns.
func selfCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkStepInstruction is one instruction step through the protocol
// (resume mode 2 and its contextSuspended).
func BenchmarkStepInstruction(b *testing.B) {
	la := startLive(b)
	_, thread := la.stoppedAtMain("loop", "1000000000")
	la.ok("Breakpoints", "add", map[string]any{"ID": "hit", "Location": "hit"})
	la.resume(thread, 0)
	la.ok("Breakpoints", "remove", []string{"hit"})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		la.resume(thread, 2)
	}
}
