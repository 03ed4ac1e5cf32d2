package dap

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/testprog"
)

// BenchmarkLaunchToFirstStop: from initialize to the stopped event of a
// line breakpoint in a freshly launched program (the adapter process is
// started outside the timing, as an editor keeps it).
func BenchmarkLaunchToFirstStop(b *testing.B) {
	prog := testprog.Build(b, testprog.Spec{Sources: []string{"dap_prog.c"}, Flags: []string{"-O0"}})
	src := testprog.Source("dap_prog.c")
	line := markerLineB(b, "dap_prog.c", "add")
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c := newBenchClient(b)
		b.StartTimer()
		c.initialize()
		c.request("launch", map[string]any{"program": prog})
		c.event("initialized")
		c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": src}, "breakpoints": []map[string]any{{"line": line}}})
		c.request("configurationDone", nil)
		c.stopped()
		b.StopTimer()
		c.request("disconnect", nil)
		c.close()
	}
}

// BenchmarkStopRound: at a breakpoint stop, what an editor asks for to
// show it: stackTrace, scopes of the top frame, its arguments and locals.
// Each round is at a new stop (the caches of a stop do not carry over).
func BenchmarkStopRound(b *testing.B) {
	prog := testprog.Build(b, testprog.Spec{Sources: []string{"dap_prog.c"}, Flags: []string{"-O0"}})
	c := newBenchClient(b)
	defer c.close()
	c.initialize()
	c.request("launch", map[string]any{"program": prog, "args": []string{"wait"}})
	c.event("initialized")
	c.request("setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "add"}}})
	c.request("configurationDone", nil)
	st := c.stopped()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		frames := c.request("stackTrace", map[string]any{"threadId": st.Body.ThreadId, "startFrame": 0, "levels": 20}).(*godap.StackTraceResponse).Body.StackFrames
		scopes := c.scopes(frames[0].Id)
		for _, s := range scopes[:2] {
			c.vars(s.VariablesReference, nil)
		}
		b.StopTimer()
		c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
		st = c.stopped()
		c.forget()
		b.StartTimer()
	}
	b.StopTimer()
	c.request("disconnect", nil)
}

// BenchmarkFirstStopRound: the round of BenchmarkStopRound at a program's
// first stop, a new adapter each time (nothing read before but what the
// launch needed).
func BenchmarkFirstStopRound(b *testing.B) {
	prog := testprog.Build(b, testprog.Spec{Sources: []string{"dap_prog.c"}, Flags: []string{"-O0"}})
	benchmarkFirstStopRound(b, prog, "setFunctionBreakpoints", map[string]any{"breakpoints": []map[string]any{{"name": "add"}}})
}

// BenchmarkFirstStopRoundCxx: BenchmarkFirstStopRound on the C++ program
// of bench/dap/run.sh (testdata/dapclient_prog.cc at -O0, its @BP1 line in
// Calc::compute): the Locals hold a std::string, whose value names a base
// class (the name index the first variables used to build), and the stack
// runs through libc's start-up code (libc's unit index, read ahead while
// the program starts).
func BenchmarkFirstStopRoundCxx(b *testing.B) { benchmarkFirstStopRoundBP1(b, "dapclient_prog.cc") }

// BenchmarkFirstStopRoundC: BenchmarkFirstStopRound on the C program of
// bench/dap/run.sh (testdata/dapclient_prog.c at -O0, its @BP1 line in
// compute): below main, libc's __libc_start_call_main, whose unit's
// abbreviations and DIEs the first stackTrace used to decode.
func BenchmarkFirstStopRoundC(b *testing.B) { benchmarkFirstStopRoundBP1(b, "dapclient_prog.c") }

// benchmarkFirstStopRoundBP1 runs benchmarkFirstStopRound on the program
// built from file at -O0, stopped at its @BP1 line.
func benchmarkFirstStopRoundBP1(b *testing.B, file string) {
	prog := testprog.Build(b, testprog.Spec{Sources: []string{file}, Flags: []string{"-O0"}})
	src := testprog.Source(file)
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	line := 0
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "// @BP1") {
			line = i + 1
		}
	}
	if line == 0 {
		b.Fatalf("no @BP1 line in %s", file)
	}
	benchmarkFirstStopRound(b, prog, "setBreakpoints", map[string]any{"source": map[string]any{"path": src}, "breakpoints": []map[string]any{{"line": line}}})
}

// benchmarkFirstStopRound times stackTrace (20 levels), scopes of the top
// frame and the variables of its Locals at the first stop of prog, at the
// breakpoints the request bpReq sets. With SONDE_PROFILE_DIR set, each
// session's adapter writes its CPU profile there (SONDE_CPUPROFILE,
// N.prof): a first stop is one session, too short for one profile at
// 100 Hz; `go tool pprof` merges them. With SONDE_TRACE_DIR set, each
// writes a runtime trace there (SONDE_TRACE, N.trace): what the round
// waited on. It reports, besides the round's
// wall time, the adapter's CPU in the round (adapter-cpu-ns/op, every
// thread's) and from launch to the stop (launch-cpu-ns/op), and the wall
// time from launch to the stop (launch-ns/op): what is read ahead moves
// from the round to the launch, and must not make the launch longer.
func benchmarkFirstStopRound(b *testing.B, prog, bpReq string, bpArgs map[string]any) {
	profDir, traceDir := os.Getenv("SONDE_PROFILE_DIR"), os.Getenv("SONDE_TRACE_DIR")
	var roundCPU, launchCPU, launchWall time.Duration
	var roundFaults int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if profDir != "" {
			b.Setenv("SONDE_CPUPROFILE", filepath.Join(profDir, strconv.Itoa(i)+".prof"))
		}
		if traceDir != "" {
			b.Setenv("SONDE_TRACE", filepath.Join(traceDir, strconv.Itoa(i)+".trace"))
		}
		c := newBenchClient(b)
		c.initialize()
		cpu0, t0 := adapterCPU(b, c), time.Now()
		c.request("launch", map[string]any{"program": prog})
		c.event("initialized")
		c.request(bpReq, bpArgs)
		c.request("configurationDone", nil)
		st := c.stopped()
		launchWall += time.Since(t0)
		cpu1 := adapterCPU(b, c)
		flt1 := adapterFaults(b, c)
		b.StartTimer()
		frames := c.request("stackTrace", map[string]any{"threadId": st.Body.ThreadId, "startFrame": 0, "levels": 20}).(*godap.StackTraceResponse).Body.StackFrames
		scopes := c.scopes(frames[0].Id)
		c.vars(scopeByName(b, scopes, "Locals").VariablesReference, nil)
		b.StopTimer()
		roundCPU += adapterCPU(b, c) - cpu1
		roundFaults += adapterFaults(b, c) - flt1
		launchCPU += cpu1 - cpu0
		c.request("disconnect", nil)
		c.close()
	}
	b.ReportMetric(float64(roundCPU.Nanoseconds())/float64(b.N), "adapter-cpu-ns/op")
	b.ReportMetric(float64(launchCPU.Nanoseconds())/float64(b.N), "launch-cpu-ns/op")
	b.ReportMetric(float64(roundFaults)/float64(b.N), "round-faults/op")
	b.ReportMetric(float64(launchWall.Nanoseconds())/float64(b.N), "launch-ns/op")
}

// adapterCPU is the CPU time the adapter process c runs has used so far
// (every thread's schedstat: nanoseconds on a CPU), as run.sh's client
// reads it.
func adapterCPU(b *testing.B, c *client) time.Duration {
	dir := fmt.Sprintf("/proc/%d/task", c.cmd.Process.Pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var ns int64
	for _, t := range tasks {
		data, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue // a thread that ended
		}
		if f := strings.Fields(string(data)); len(f) > 0 {
			v, _ := strconv.ParseInt(f[0], 10, 64)
			ns += v
		}
	}
	return time.Duration(ns)
}

// adapterFaults is the number of minor page faults the adapter process c
// runs has taken so far (/proc/PID/stat's minflt): a fresh process's heap
// grows by faulting in new pages.
func adapterFaults(b *testing.B, c *client) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	v, _ := strconv.ParseInt(f[7], 10, 64)
	return v
}
