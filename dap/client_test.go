package dap

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/internal/testprog"
)

// client drives `sonde dap` over its stdin and stdout with go-dap's
// messages, decoding what it sends with go-dap's own decoder (so every
// response and event is checked against the protocol's types).
type client struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	seq    int
	mu     sync.Mutex
	cond   *sync.Cond
	msgs   []godap.Message
	used   []bool
	err    error
	stderr *strings.Builder
	closed bool
}

const waitLimit = 15 * time.Second

func newClient(t testing.TB) *client {
	t.Helper()
	return newAdapterClient(t, testprog.Sonde(t), "dap")
}

// close ends the adapter (closing its input, as a vanishing client does).
func (c *client) close() {
	c.mu.Lock()
	closed := c.closed
	c.closed = true
	c.mu.Unlock()
	if closed {
		return
	}
	c.stdin.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
	if s := c.stderr.String(); s != "" {
		c.t.Logf("sonde dap stderr:\n%s", s)
	}
}

// forget drops the messages taken so far (long benchmarks).
func (c *client) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	var msgs []godap.Message
	var used []bool
	for i, m := range c.msgs {
		if !c.used[i] {
			msgs = append(msgs, m)
			used = append(used, false)
		}
	}
	c.msgs, c.used = msgs, used
}

func newBenchClient(b *testing.B) *client { return newClient(b) }

func markerLineB(b *testing.B, file, name string) int { return markerLine(b, file, name) }

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (c *client) read(r io.Reader) {
	br := bufio.NewReader(r)
	for {
		m, err := godap.ReadProtocolMessage(br)
		c.mu.Lock()
		if err != nil {
			c.err = err
			c.cond.Broadcast()
			c.mu.Unlock()
			return
		}
		if os.Getenv("DAP_TRACE") != "" {
			b, _ := json.Marshal(m)
			fmt.Fprintf(os.Stderr, "%s %.200s\n", time.Now().Format("05.000"), b)
		}
		c.msgs = append(c.msgs, m)
		c.used = append(c.used, false)
		c.cond.Broadcast()
		c.mu.Unlock()
	}
}

// send sends a request with the next sequence number; command and args
// are marshalled as a generic request so tests can send any arguments.
func (c *client) send(command string, args any) int {
	c.t.Helper()
	c.seq++
	m := map[string]any{"seq": c.seq, "type": "request", "command": command}
	if args != nil {
		m["arguments"] = args
	}
	b, err := json.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.raw(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(b), b))
	return c.seq
}

func (c *client) raw(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, s); err != nil {
		c.t.Fatalf("write to sonde dap: %v", err)
	}
}

// wait returns the first message not yet taken that match accepts.
func (c *client) wait(what string, match func(godap.Message) bool) godap.Message {
	c.t.Helper()
	deadline := time.Now().Add(waitLimit)
	timer := time.AfterFunc(waitLimit, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for i, m := range c.msgs {
			if !c.used[i] && match(m) {
				c.used[i] = true
				return m
			}
		}
		if c.err != nil || time.Now().After(deadline) {
			var seen []string
			for i, m := range c.msgs {
				if !c.used[i] {
					b, _ := json.Marshal(m)
					seen = append(seen, string(b))
				}
			}
			c.t.Fatalf("waiting for %s: %v; unclaimed messages:\n%s", what, c.err, strings.Join(seen, "\n"))
		}
		c.cond.Wait()
	}
}

// response waits for the response to request seq; it fails the test on an
// error response unless wantErr.
func (c *client) response(seq int) godap.ResponseMessage {
	c.t.Helper()
	m := c.wait(fmt.Sprintf("response to request %d", seq), func(m godap.Message) bool {
		r, ok := m.(godap.ResponseMessage)
		return ok && r.GetResponse().RequestSeq == seq
	})
	r := m.(godap.ResponseMessage)
	if !r.GetResponse().Success {
		c.t.Fatalf("request %d failed: %s", seq, r.GetResponse().Message)
	}
	return r
}

// errorResponse waits for the response to seq and wants it to fail.
func (c *client) errorResponse(seq int) *godap.ErrorResponse {
	c.t.Helper()
	m := c.wait(fmt.Sprintf("response to request %d", seq), func(m godap.Message) bool {
		r, ok := m.(godap.ResponseMessage)
		return ok && r.GetResponse().RequestSeq == seq
	})
	er, ok := m.(*godap.ErrorResponse)
	if !ok {
		c.t.Fatalf("request %d succeeded (%T), want an error", seq, m)
	}
	return er
}

// request sends and waits for the successful response.
func (c *client) request(command string, args any) godap.ResponseMessage {
	c.t.Helper()
	return c.response(c.send(command, args))
}

func (c *client) event(name string) godap.EventMessage {
	c.t.Helper()
	return c.wait("event "+name, func(m godap.Message) bool {
		e, ok := m.(godap.EventMessage)
		return ok && e.GetEvent().Event == name
	}).(godap.EventMessage)
}

func (c *client) stopped() *godap.StoppedEvent {
	c.t.Helper()
	return c.event("stopped").(*godap.StoppedEvent)
}

// noEvent checks that no event of that name came within d.
func (c *client) noEvent(name string, d time.Duration) {
	c.t.Helper()
	time.Sleep(d)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.msgs {
		if e, ok := m.(godap.EventMessage); ok && !c.used[i] && e.GetEvent().Event == name {
			b, _ := json.Marshal(m)
			c.t.Fatalf("unexpected %s event: %s", name, b)
		}
	}
}

// output collects the output events of a category received so far.
func (c *client) output(category string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, m := range c.msgs {
		if o, ok := m.(*godap.OutputEvent); ok && o.Body.Category == category {
			b.WriteString(o.Body.Output)
		}
	}
	return b.String()
}

// markerLine returns the line of a /* BP:name */ marker in a testdata file.
func markerLine(t testing.TB, file, name string) int {
	t.Helper()
	b, err := os.ReadFile(testprog.Source(file))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "/* BP:"+name+" */") {
			return i + 1
		}
	}
	t.Fatalf("no marker BP:%s in %s", name, file)
	return 0
}

func buildProg(t testing.TB) string {
	return testprog.Build(t, testprog.Spec{Sources: []string{"dap_prog.c"}, Flags: []string{"-O0"}})
}

// initialize sends initialize and checks the capabilities.
func (c *client) initialize() *godap.Capabilities {
	c.t.Helper()
	r := c.request("initialize", map[string]any{"adapterID": "sonde", "clientID": "go-test", "linesStartAt1": true,
		"columnsStartAt1": true, "pathFormat": "path", "supportsVariableType": true, "supportsVariablePaging": true,
		"supportsMemoryReferences": true, "supportsInvalidatedEvent": true, "supportsMemoryEvent": true}).(*godap.InitializeResponse)
	return &r.Body
}

// stack returns a thread's frames.
func (c *client) stack(tid int) []godap.StackFrame {
	c.t.Helper()
	return c.request("stackTrace", map[string]any{"threadId": tid}).(*godap.StackTraceResponse).Body.StackFrames
}

func (c *client) scopes(frame int) []godap.Scope {
	c.t.Helper()
	return c.request("scopes", map[string]any{"frameId": frame}).(*godap.ScopesResponse).Body.Scopes
}

func (c *client) vars(ref int, extra map[string]any) []godap.Variable {
	c.t.Helper()
	args := map[string]any{"variablesReference": ref}
	for k, v := range extra {
		args[k] = v
	}
	return c.request("variables", args).(*godap.VariablesResponse).Body.Variables
}

func varByName(t *testing.T, vs []godap.Variable, name string) godap.Variable {
	t.Helper()
	for _, v := range vs {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no variable %q in %+v", name, vs)
	return godap.Variable{}
}

func scopeByName(t testing.TB, ss []godap.Scope, name string) godap.Scope {
	t.Helper()
	for _, s := range ss {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no scope %q in %+v", name, ss)
	return godap.Scope{}
}

func (c *client) evaluate(expr string, frame int, context string) *godap.EvaluateResponse {
	c.t.Helper()
	return c.request("evaluate", map[string]any{"expression": expr, "frameId": frame, "context": context}).(*godap.EvaluateResponse)
}
