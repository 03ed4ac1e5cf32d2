package dap

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/testprog"
)

// The round after a step, in process: a Server served over in-memory pipes
// (no adapter process, no client runtime), so that what a benchmark and a
// CPU profile show is the server's own work. bench/dap/run.sh times the same
// round through the DebugClient against lldb-vscode.

// inproc drives a Server in this process over io.Pipes.
type inproc struct {
	tb   testing.TB
	srv  *Server
	w    *io.PipeWriter
	msgs chan godap.Message
	done chan error
	seq  int
	// stops are stopped events that came while a response was awaited.
	stops []*godap.StoppedEvent
	tid   int // the server's thread
	// times of the last round's requests, and its frames.
	times  [3]time.Duration
	frames int
}

func newInproc(tb testing.TB) *inproc {
	tb.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &inproc{tb: tb, srv: NewServer(Options{}), w: inW, msgs: make(chan godap.Message, 256), done: make(chan error, 1)}
	tid := make(chan int, 1)
	go func() {
		// With SONDE_ROUND_THREAD set, on a thread of its own, so that the
		// thread's CPU time is the server's (server-cpu-ns/op; the lock
		// adds thread switches to the wall time).
		if os.Getenv("SONDE_ROUND_THREAD") != "" {
			runtime.LockOSThread()
			tid <- syscall.Gettid()
		} else {
			tid <- 0
		}
		err := c.srv.Serve(inR, outW)
		outW.Close()
		c.done <- err
	}()
	c.tid = <-tid
	go func() {
		br := bufio.NewReaderSize(outR, 64<<10)
		for {
			m, err := godap.ReadProtocolMessage(br)
			if err != nil {
				close(c.msgs)
				io.Copy(io.Discard, outR)
				return
			}
			c.msgs <- m
		}
	}()
	return c
}

func (c *inproc) send(command string, args any) int {
	c.tb.Helper()
	c.seq++
	m := map[string]any{"seq": c.seq, "type": "request", "command": command}
	if args != nil {
		m["arguments"] = args
	}
	b, err := json.Marshal(m)
	if err != nil {
		c.tb.Fatal(err)
	}
	if _, err := fmt.Fprintf(c.w, "Content-Length: %d\r\n\r\n%s", len(b), b); err != nil {
		c.tb.Fatalf("write to the server: %v", err)
	}
	return c.seq
}

// next returns the next message from the server.
func (c *inproc) next(what string) godap.Message {
	c.tb.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.tb.Fatalf("waiting for %s: the server's stream ended", what)
		}
		return m
	case <-time.After(waitLimit):
		c.tb.Fatalf("waiting for %s: timed out", what)
	}
	return nil
}

// request sends a request and returns its successful response; stopped
// events that come first are kept for stopped.
func (c *inproc) request(command string, args any) godap.ResponseMessage {
	c.tb.Helper()
	seq := c.send(command, args)
	for {
		m := c.next("response to " + command)
		switch m := m.(type) {
		case godap.ResponseMessage:
			r := m.GetResponse()
			if r.RequestSeq != seq {
				continue
			}
			if !r.Success {
				c.tb.Fatalf("%s failed: %s", command, r.Message)
			}
			return m
		case *godap.StoppedEvent:
			c.stops = append(c.stops, m)
		}
	}
}

// stopped waits for the next stopped event.
func (c *inproc) stopped() *godap.StoppedEvent {
	c.tb.Helper()
	if len(c.stops) > 0 {
		st := c.stops[0]
		c.stops = c.stops[1:]
		return st
	}
	for {
		if st, ok := c.next("stopped event").(*godap.StoppedEvent); ok {
			return st
		}
	}
}

func (c *inproc) close() {
	c.send("disconnect", nil)
	c.w.Close()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.tb.Errorf("the server did not end")
	}
}

// round is what an editor asks at a stop (bench/dap/run.sh's round):
// stackTrace of 20 levels, scopes of the top frame, variables of its Locals.
// It returns the Locals' names.
func (c *inproc) round(tid int) []string {
	c.tb.Helper()
	t0 := time.Now()
	st := c.request("stackTrace", map[string]any{"threadId": tid, "startFrame": 0, "levels": 20}).(*godap.StackTraceResponse)
	t1 := time.Now()
	sc := c.request("scopes", map[string]any{"frameId": st.Body.StackFrames[0].Id}).(*godap.ScopesResponse)
	t2 := time.Now()
	ref := 0
	for _, s := range sc.Body.Scopes {
		if s.Name == "Locals" {
			ref = s.VariablesReference
		}
	}
	if ref == 0 {
		c.tb.Fatalf("no Locals scope in %+v", sc.Body.Scopes)
	}
	vs := c.request("variables", map[string]any{"variablesReference": ref}).(*godap.VariablesResponse)
	t3 := time.Now()
	c.times = [3]time.Duration{t1.Sub(t0), t2.Sub(t1), t3.Sub(t2)}
	c.frames = len(st.Body.StackFrames)
	names := make([]string, len(vs.Body.Variables))
	for i, v := range vs.Body.Variables {
		names[i] = v.Name
	}
	return names
}

// benchProgram is one of bench/dap/run.sh's programs and its @BP1 line.
type benchProgram struct {
	path, source string
	line         int
}

func dapclientProgram(tb testing.TB, lang string) benchProgram {
	tb.Helper()
	var p benchProgram
	switch lang {
	case "c", "cc":
		p.source = testprog.Source("dapclient_prog." + lang)
		p.path = testprog.Build(tb, testprog.Spec{Sources: []string{"dapclient_prog." + lang}, Flags: []string{"-O0"}})
	case "rs":
		p.source = testprog.Source("dapclient_prog.rs")
		p.path = testprog.BuildRust(tb, "dapclient_prog.rs", "dapclient_prog_rs", "-C", "opt-level=0")
	}
	data, err := os.ReadFile(p.source)
	if err != nil {
		tb.Fatal(err)
	}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "// @BP1") {
			p.line = i + 1
		}
	}
	if p.line == 0 {
		tb.Fatalf("no @BP1 line in %s", p.source)
	}
	return p
}

// launchToBP1 starts a session stopped at the program's @BP1 line and
// takes the first stop's round (cold), as run.sh does before its step.
func launchToBP1(tb testing.TB, p benchProgram) (*inproc, int) {
	tb.Helper()
	c := newInproc(tb)
	c.request("initialize", map[string]any{"adapterID": "sonde", "linesStartAt1": true, "columnsStartAt1": true, "pathFormat": "path"})
	c.request("launch", map[string]any{"program": p.path})
	c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": p.source}, "breakpoints": []map[string]any{{"line": p.line}}})
	c.request("configurationDone", nil)
	tid := c.stopped().Body.ThreadId
	c.round(tid)
	return c, tid
}

// stepsPerSession is how many `next`s a benchmark session takes from @BP1:
// all stay in compute's loop (4 iterations of two lines and the loop's
// header) in the three programs.
const stepsPerSession = 8

// benchmarkStepRound times the round at the stop of a `next` (line
// granularity) in compute, stepsPerSession rounds a session: wall time,
// the process's CPU time (cpu-ns/op: the server, the tracer thread, the
// garbage collector and this in-process client's decoding) and, with
// SONDE_ROUND_THREAD set, the server goroutine's alone (server-cpu-ns/op:
// its thread's, reading, handling, encoding and writing the three
// requests; the lock adds thread switches to the wall time). With
// SONDE_ROUND_LOG set it logs each round's time and Locals.
//
// To profile the warm round: SONDE_PROFILE_HZ=250 (go test's 100 Hz sees
// little of a round; the kernel's tick bounds the rate), SONDE_ROUND_STEPS=N
// steps by instructions, N a session (100 stay in compute), so that warm
// rounds outweigh each session's first one, and -cpuprofile's samples of the
// warm rounds are those of `go tool pprof -tagfocus stop=later -focus
// 'Server..(stackTrace|scopes|variables)$'`. SONDE_ROUND_STEPS=1
// SONDE_ROUND_GRANULARITY=line is run.sh's round: one line step a session.
func benchmarkStepRound(b *testing.B, lang string) {
	b.ReportAllocs()
	b.StopTimer() // building the program is not timed
	p := dapclientProgram(b, lang)
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(400)) // as `sonde dap` runs
	}
	steps, granularity := stepsPerSession, "line"
	if n, err := strconv.Atoi(os.Getenv("SONDE_ROUND_STEPS")); err == nil && n > 0 {
		steps, granularity = n, "instruction"
		if g := os.Getenv("SONDE_ROUND_GRANULARITY"); g != "" {
			granularity = g
		}
	}
	var c *inproc
	var tid, stepped int
	var cpu, scpu, step time.Duration
	for i := 0; i < b.N; i++ {
		if c == nil || stepped == steps {
			if c != nil {
				c.close()
			}
			c, tid = launchToBP1(b, p)
			stepped = 0
		}
		ts := time.Now()
		c.request("next", map[string]any{"threadId": tid, "granularity": granularity})
		if st := c.stopped(); st.Body.Reason != "step" {
			b.Fatalf("stopped for %q after next, want step", st.Body.Reason)
		}
		step += time.Since(ts)
		stepped++
		t0, cpu0, scpu0 := time.Now(), processCPU(), threadCPU(b, c.tid)
		b.StartTimer()
		names := c.round(tid)
		b.StopTimer()
		cpu += processCPU() - cpu0
		scpu += threadCPU(b, c.tid) - scpu0
		if os.Getenv("SONDE_ROUND_LOG") != "" {
			b.Logf("step %d: %v (stackTrace %v of %d frames, scopes %v, variables %v) %v", stepped, time.Since(t0), c.times[0], c.frames, c.times[1], c.times[2], names)
		}
		if len(names) == 0 {
			b.Fatal("the round's Locals are empty")
		}
	}
	if c != nil {
		c.close()
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(step.Nanoseconds())/float64(b.N), "step-ns/op") // the `next` until its stop, not in ns/op
	if c != nil && c.tid != 0 {
		b.ReportMetric(float64(scpu.Nanoseconds())/float64(b.N), "server-cpu-ns/op")
	}
}

// threadCPU is the CPU time of thread tid of this process (schedstat's
// first field: nanoseconds on a CPU).
func threadCPU(b *testing.B, tid int) time.Duration {
	if tid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/schedstat", tid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data))
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || len(f) < 1 {
		b.Fatalf("schedstat of thread %d: %q", tid, data)
	}
	return time.Duration(ns)
}

// processCPU is the CPU time of this process (all its threads: the
// server's, the tracer thread, the in-process client's decoding).
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStepRoundC: the round after a step in testdata/dapclient_prog.c
// (compute, called from main, from libc's start-up code).
func BenchmarkStepRoundC(b *testing.B) { benchmarkStepRound(b, "c") }

// BenchmarkStepRoundCxx: the same in testdata/dapclient_prog.cc (a member
// function: `this` among the arguments, a std::string among the locals).
func BenchmarkStepRoundCxx(b *testing.B) { benchmarkStepRound(b, "cc") }

// BenchmarkStepRoundRust: the same in testdata/dapclient_prog.rs (below
// main, std's runtime frames: lang_start and its closures).
func BenchmarkStepRoundRust(b *testing.B) { benchmarkStepRound(b, "rs") }

func init() {
	// Before go test's -cpuprofile starts (its own 100 Hz is then refused,
	// with a warning).
	if hz, err := strconv.Atoi(os.Getenv("SONDE_PROFILE_HZ")); err == nil && hz > 0 {
		runtime.SetCPUProfileRate(hz)
	}
}
