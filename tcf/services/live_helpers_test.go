package services_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/ptrace"
	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
	"github.com/sondedbg/sonde/tcf/services"
)

// liveAgent is sonde's agent over the ptrace backend, serving on a loopback
// port, with one client connected that records every event it receives.
type liveAgent struct {
	t      testing.TB
	addr   string
	srv    *tcf.Server
	agent  *services.Agent
	tgt    *target.Target
	c      *client.Client
	events *eventLog
}

// startLive starts the agent over a fresh ptrace target. Cleanup shuts the
// agent down (which detaches from everything) and kills what tests launched.
func startLive(t testing.TB) *liveAgent {
	t.Helper()
	tgt, err := ptrace.New()
	if err != nil {
		t.Skipf("ptrace is not usable here: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("SONDE_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cfg := tcf.Config{Logger: logger}
	if _, bench := t.(*testing.B); bench {
		// In process the client shares the agent's two Ps, and the reader's
		// spin (for clients in other processes) only takes one from it; the
		// cross-process figures (bench/tcf) are taken with the default.
		cfg.ReadSpin = -1
	}
	srv := tcf.NewServer(cfg)
	tcf.RegisterDiagnostics(srv)
	a := services.New(srv, session.New(tgt, session.Options{}))
	a.RegisterAll()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	la := &liveAgent{t: t, addr: l.Addr().String(), srv: srv, agent: a, tgt: tgt}
	// Every process the target had, remembered as it appears (with its
	// start time: pids are reused quickly): the last client's close (a
	// cleanup that runs first) detaches them all.
	var pidMu sync.Mutex
	pids := map[int]string{}
	remember := func(pid int) {
		if st := startTime(pid); st != "" {
			pidMu.Lock()
			pids[pid] = st
			pidMu.Unlock()
		}
	}
	tgt.AddListener(func(e target.Event) {
		if e.Kind == target.EventCreated && e.Context.IsProcess() {
			remember(e.Context.PID())
		}
	})
	t.Cleanup(func() {
		for _, p := range tgt.Processes() {
			remember(p.PID())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		pidMu.Lock()
		defer pidMu.Unlock()
		for pid, st := range pids {
			killIfSame(pid, st)
		}
	})
	la.c, la.events = la.dial()
	return la
}

// killIfSame SIGKILLs process pid if it is still the one that started at
// start (startTime): the pidfd is opened first, then the start time checked,
// so the signal cannot reach a process that got the number meanwhile.
func killIfSame(pid int, start string) {
	p, err := os.FindProcess(pid) // a pidfd on Linux
	if err != nil {
		return
	}
	defer p.Release()
	if startTime(pid) == start {
		p.Kill()
	}
}

// startTime is the start time of process pid (field 22 of its stat), "" if
// there is no such process.
func startTime(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// dial connects one more client that records its events.
func (la *liveAgent) dial() (*client.Client, *eventLog) {
	la.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, la.addr, client.Options{})
	if err != nil {
		la.t.Fatal(err)
	}
	la.t.Cleanup(func() { c.Close() })
	ev := &eventLog{changed: make(chan struct{}, 1)}
	c.OnEvent("", "", ev.add)
	return c, ev
}

// callDeadline bounds the wait for one reply. It guards against a hang, not
// a slow reply: a process's first Breakpoints.add indexes its symbols (0.4 s
// of CPU, 0.5-2.6 s on one CPU shared with four busy loops), and under the
// whole suite at load 15-22 that once took more than the 20 s this was.
const callDeadline = 90 * time.Second

// call runs one command and fails the test if it gets no reply.
func (la *liveAgent) call(service, cmd string, args ...any) *client.Result {
	la.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
	defer cancel()
	r, err := la.c.Call(ctx, service, cmd, args...)
	if err != nil {
		la.t.Fatalf("%s.%s: %v", service, cmd, err)
	}
	return r
}

// ok runs an error-only command and fails the test on an error report.
func (la *liveAgent) ok(service, cmd string, args ...any) {
	la.t.Helper()
	var e error
	if err := la.call(service, cmd, args...).Decode(&e); err != nil {
		la.t.Fatalf("%s.%s reply: %v", service, cmd, err)
	}
	if e != nil {
		la.t.Fatalf("%s.%s: %v", service, cmd, e)
	}
}

// decode runs a command and decodes its reply, failing on an error report in
// the field errAt (the position of the command's error field).
func (la *liveAgent) decode(service, cmd string, args []any, dst ...any) {
	la.t.Helper()
	r := la.call(service, cmd, args...)
	if err := r.Decode(dst...); err != nil {
		la.t.Fatalf("%s.%s reply %q: %v", service, cmd, r.Raw(), err)
	}
	for _, d := range dst {
		if e, ok := d.(*error); ok && *e != nil {
			la.t.Fatalf("%s.%s: %v", service, cmd, *e)
		}
	}
}

// event is one received event, its arguments decoded as JSON.
type event struct {
	Service, Name string
	Args          []any
	Raw           []string
}

func (e event) String() string {
	return e.Service + "." + e.Name + "(" + strings.Join(e.Raw, ", ") + ")"
}

func (e event) str(i int) string {
	if i < len(e.Args) {
		s, _ := e.Args[i].(string)
		return s
	}
	return ""
}

// eventLog keeps every event a client received, in order.
type eventLog struct {
	mu      sync.Mutex
	list    []event
	changed chan struct{}
}

func (l *eventLog) add(ev client.Event) {
	e := event{Service: ev.Service, Name: ev.Name}
	for _, f := range ev.Fields {
		e.Raw = append(e.Raw, string(f.Data))
		var v any
		d := json.NewDecoder(strings.NewReader(string(f.Data)))
		d.UseNumber()
		if f.Binary {
			v = f.Data
		} else if len(f.Data) > 0 {
			if err := d.Decode(&v); err != nil {
				v = fmt.Sprintf("undecodable %q", f.Data)
			}
		}
		e.Args = append(e.Args, v)
	}
	l.mu.Lock()
	l.list = append(l.list, e)
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// mark returns the current position, for since and waitFrom.
func (l *eventLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.list)
}

// since returns the events received from position i on.
func (l *eventLog) since(i int) []event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]event(nil), l.list[i:]...)
}

// wait waits for an event from position from on that matches; it returns the
// event and the position after it.
func (l *eventLog) wait(t testing.TB, from int, what string, match func(event) bool) (event, int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		l.mu.Lock()
		for i := from; i < len(l.list); i++ {
			if match(l.list[i]) {
				e := l.list[i]
				l.mu.Unlock()
				return e, i + 1
			}
		}
		l.mu.Unlock()
		select {
		case <-l.changed:
		case <-deadline:
			t.Fatalf("no %s within 20s; events since %d:\n%s", what, from, dump(l.since(from)))
		}
	}
}

func dump(evs []event) string {
	var b strings.Builder
	for _, e := range evs {
		s := e.String()
		if len(s) > 300 {
			s = s[:300] + "..."
		}
		b.WriteString("  " + s + "\n")
	}
	return b.String()
}

// is matches an event by service, name and (optionally) first argument.
func is(service, name, id string) func(event) bool {
	return func(e event) bool {
		if e.Service != service || e.Name != name {
			return false
		}
		if id == "" {
			return true
		}
		if e.str(0) == id {
			return true
		}
		// contextAdded/Removed carry arrays.
		if len(e.Args) > 0 {
			if arr, ok := e.Args[0].([]any); ok {
				for _, x := range arr {
					if s, ok := x.(string); ok && s == id {
						return true
					}
					if m, ok := x.(map[string]any); ok && m["ID"] == id {
						return true
					}
				}
			}
		}
		return false
	}
}

// names lists "Service.name" of events, for comparing sequences.
func names(evs []event, keep func(event) bool) []string {
	var out []string
	for _, e := range evs {
		if keep == nil || keep(e) {
			out = append(out, e.Service+"."+e.Name)
		}
	}
	return out
}

// agentProg builds testdata/agent_prog.c at -O0.
func agentProg(t testing.TB) string {
	t.Helper()
	return testprog.Build(t, testprog.Spec{Sources: []string{"agent_prog.c"}, Flags: []string{"-O0"}})
}

// startProcess launches prog with ProcessesV1.start and returns the process
// and main-thread IDs. opts are the V1 start parameters.
func (la *liveAgent) startProcess(prog string, argv []string, opts map[string]any) (proc string, props tcf.Props) {
	la.t.Helper()
	var e error
	la.decode("ProcessesV1", "start", []any{"", prog, append([]string{prog}, argv...), nil, opts}, &e, &props)
	proc, _ = props.String("ID")
	if proc == "" {
		la.t.Fatalf("start: no ID in %v", props)
	}
	return proc, props
}

// mainThread is P<pid>.<pid> of a process ID.
func mainThread(proc string) string {
	return proc + "." + strings.TrimPrefix(proc, "P")
}

// suspended waits for the next contextSuspended of id from position from on
// and returns its pc, reason and params.
func (la *liveAgent) suspended(from int, id string) (pc uint64, reason string, params map[string]any, next int) {
	la.t.Helper()
	e, next := la.events.wait(la.t, from, "contextSuspended of "+id, is("RunControl", "contextSuspended", id))
	if len(e.Args) != 4 {
		la.t.Fatalf("contextSuspended with %d arguments: %v", len(e.Args), e)
	}
	pc = num(e.Args[1])
	reason, _ = e.Args[2].(string)
	params, _ = e.Args[3].(map[string]any)
	return pc, reason, params, next
}

// resume resumes id in mode and waits for it to stop again.
func (la *liveAgent) resume(id string, mode int) (pc uint64, reason string, params map[string]any) {
	la.t.Helper()
	m := la.events.mark()
	la.ok("RunControl", "resume", id, mode, 1)
	pc, reason, params, _ = la.suspended(m, id)
	return
}

// symbolAt names the function and line at pc with Symbols and LineNumbers.
func (la *liveAgent) lineAt(ctx string, pc uint64) (file string, line int) {
	la.t.Helper()
	var e error
	var areas []map[string]any
	la.decode("LineNumbers", "mapToSource", []any{ctx, pc, pc + 1}, &e, &areas)
	if len(areas) == 0 {
		return "", 0
	}
	f, _ := areas[0]["File"].(string)
	return f, int(num(areas[0]["SLine"]))
}

func (la *liveAgent) funcAt(ctx string, pc uint64) string {
	la.t.Helper()
	var e error
	var sym string
	r := la.call("Symbols", "findByAddr", ctx, pc)
	if err := r.Decode(&e, &sym); err != nil || e != nil {
		return ""
	}
	return la.symbolName(sym)
}

// symbolName is the Name of a symbol ID ("" when it has none).
func (la *liveAgent) symbolName(id string) string {
	la.t.Helper()
	var e error
	var props map[string]any
	la.decode("Symbols", "getContext", []any{id}, &e, &props)
	name, _ := props["Name"].(string)
	return name
}

// breakAt adds breakpoint bp and resumes thread until it stops there.
func (la *liveAgent) breakAt(thread string, bp map[string]any) {
	la.t.Helper()
	la.ok("Breakpoints", "add", bp)
	if _, reason, params := la.resume(thread, 0); reason != "Breakpoint" {
		la.t.Fatalf("running to breakpoint %v: stopped with %q %v", bp["ID"], reason, params)
	}
}

// topFrames returns the IDs of a stopped thread's n innermost frames, top
// first.
func (la *liveAgent) topFrames(thread string, n int) []string {
	la.t.Helper()
	var e error
	var ids []string
	la.decode("StackTrace", "getChildrenRange", []any{thread, 0, n - 1}, &e, &ids)
	return ids
}

// runToExit resumes thread and returns proc's exit code.
func (la *liveAgent) runToExit(thread, proc string) int64 {
	la.t.Helper()
	m := la.events.mark()
	la.ok("RunControl", "resume", thread, 0, 1)
	return la.exitCode(m, proc)
}

// sourceLine finds the line of testdata/name holding marker.
func sourceLine(t testing.TB, name, marker string) int {
	t.Helper()
	data, err := os.ReadFile(testprog.Source(name))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, marker) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line with %q", name, marker)
	return 0
}
