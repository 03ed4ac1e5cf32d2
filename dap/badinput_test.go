package dap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	godap "github.com/google/go-dap"
)

// TestBadInput: malformed JSON, wrong Content-Length, unknown requests,
// arguments of the wrong type and requests out of order get error
// responses; sonde dap goes on serving.
func TestBadInput(t *testing.T) {
	c := newClient(t)
	c.raw("Content-Length: 9\r\n\r\n{\"seq\":1,")
	c.wait("error for malformed JSON", func(m godap.Message) bool {
		r, ok := m.(*godap.ErrorResponse)
		return ok && strings.Contains(r.Message, "malformed")
	})
	// A Content-Length too short: the rest of the body is garbage before
	// the next header, which is found again.
	body := `{"seq":2,"type":"request","command":"threads"}`
	c.raw(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body)-10, body))
	c.wait("error for a cut body", func(m godap.Message) bool {
		r, ok := m.(*godap.ErrorResponse)
		return ok && r.RequestSeq == 0 && r.Message != ""
	})
	c.raw("Content-Length: banana\r\n\r\n")
	c.wait("error for a bad length", func(m godap.Message) bool {
		r, ok := m.(*godap.ErrorResponse)
		return ok && strings.Contains(r.Message, "banana")
	})
	c.raw("Content-Length: 99999999999\r\n\r\n")
	c.wait("error for a huge length", func(m godap.Message) bool {
		r, ok := m.(*godap.ErrorResponse)
		return ok && strings.Contains(r.Message, "99999999999")
	})
	if er := c.errorResponse(c.send("frobnicate", nil)); !strings.Contains(er.Message, "frobnicate") {
		t.Errorf("unknown request: %q", er.Message)
	}
	if er := c.errorResponse(c.send("stackTrace", map[string]any{"threadId": "one"})); !strings.Contains(er.Message, "threadId") {
		t.Errorf("wrong argument type: %q", er.Message)
	}
	if er := c.errorResponse(c.send("launch", map[string]any{"program": 7})); !strings.Contains(er.Message, "program") {
		t.Errorf("wrong launch argument type: %q", er.Message)
	}
	if er := c.errorResponse(c.send("launch", map[string]any{"program": "/no/such/program"})); !strings.Contains(er.Message, "no such file") {
		t.Errorf("launch of a missing program: %q", er.Message)
	}
	if er := c.errorResponse(c.send("launch", map[string]any{"program": "/bin/true", "env": 3})); !strings.Contains(er.Message, "env") {
		t.Errorf("bad env: %q", er.Message)
	}
	if er := c.errorResponse(c.send("continue", map[string]any{"threadId": 1})); !strings.Contains(er.Message, "launch or attach") {
		t.Errorf("continue before launch: %q", er.Message)
	}
	if er := c.errorResponse(c.send("attach", map[string]any{"pid": -5})); er.Message == "" {
		t.Errorf("attach to pid -5: %+v", er)
	}
	if er := c.errorResponse(c.send("variables", map[string]any{"variablesReference": 12345})); er.Message == "" {
		t.Errorf("variables of nothing: %+v", er)
	}
	for _, cmd := range []string{"scopes", "evaluate", "setVariable", "readMemory", "disassemble", "stepIn", "exceptionInfo",
		"setBreakpoints", "dataBreakpointInfo", "completions", "modules", "pause", "next"} {
		seq := c.send(cmd, map[string]any{"frameId": []int{1}, "threadId": nil, "source": 5})
		c.wait("response to "+cmd, func(m godap.Message) bool {
			r, ok := m.(godap.ResponseMessage)
			return ok && r.GetResponse().RequestSeq == seq
		})
	}
	// Still serving.
	c.initialize()
	c.request("disconnect", nil)
}

// TestReaderFraming checks the framing reader on its own.
func TestReaderFraming(t *testing.T) {
	in := "Content-Length: 2\r\n\r\n{}" +
		"content-length:3\r\nContent-Type: application/json\r\n\r\n[1]" +
		"\r\n" + "Content-Length: 1\r\n\r\n" // cut
	r := NewReader(strings.NewReader(in))
	for _, want := range []string{"{}", "[1]"} {
		b, err := r.Read()
		if err != nil || string(b) != want {
			t.Fatalf("Read: %q, %v; want %q", b, err, want)
		}
	}
	if _, err := r.Read(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a cut body: %v", err)
	}
	long := strings.Repeat("x", 5000) + "\r\nContent-Length: 2\r\n\r\n{}"
	r = NewReader(strings.NewReader(long))
	if _, err := r.Read(); err == nil {
		t.Errorf("a 5000-byte header line was accepted")
	}
	if b, err := r.Read(); err != nil || string(b) != "{}" {
		t.Errorf("after a long line: %q, %v", b, err)
	}
}

// FuzzReader: the framing reader never panics, never returns a body over
// the limit, and always makes progress.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"Content-Length: 2\r\n\r\n{}",
		"Content-Length: -1\r\n\r\n",
		"Content-Length: 5\r\n\r\n{}",
		"x\r\n\r\n",
		"\r\n\r\nContent-Length: 0\r\n\r\n",
		"garbageContent-Length: 2\r\n\r\n{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		for i := 0; i <= len(data)+1; i++ {
			b, err := r.Read()
			if len(b) > MaxContent {
				t.Fatalf("body of %d bytes", len(b))
			}
			var fe *FrameError
			if err != nil && !errors.As(err, &fe) {
				return
			}
		}
		t.Fatalf("no end after %d reads of %d bytes", len(data)+2, len(data))
	})
}

// FuzzDecode: any message body, with any arguments, gets an answer from a
// server with no target, without a panic (handlers recover, but none
// should need to: a panic fails the fuzz target).
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"seq":1,"type":"request","command":"initialize","arguments":{"adapterID":"x","linesStartAt1":true}}`,
		`{"seq":2,"type":"request","command":"launch","arguments":{"program":"","env":{"A":"1","B":null}}}`,
		`{"seq":3,"type":"request","command":"setBreakpoints","arguments":{"source":{"path":"a.c"},"breakpoints":[{"line":3,"condition":"x>"}]}}`,
		`{"seq":4,"type":"request","command":"evaluate","arguments":{"expression":"1+","context":"repl"}}`,
		`{"seq":5,"type":"request","command":"evaluate","arguments":{"expression":"x/4xb 0","context":"repl"}}`,
		`{"seq":6,"type":"request","command":"variables","arguments":{"variablesReference":1,"start":-5,"count":-1}}`,
		`{"seq":7,"type":"request","command":"setInstructionBreakpoints","arguments":{"breakpoints":[{"instructionReference":"0xzz"}]}}`,
		`{"seq":8,"type":"request","command":"setDataBreakpoints","arguments":{"breakpoints":[{"dataId":"0x10/3"}]}}`,
		`{"seq":9,"type":"request","command":"completions","arguments":{"text":"ab","column":99}}`,
		`{"seq":10,"type":"response","command":"runInTerminal","success":true}`,
		`{"seq":11,"type":"event","event":"x"}`,
		`[1,2]`,
		`{"seq":12,"type":"request","command":"attach","arguments":{"pid":"12x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var out bytes.Buffer
		s := NewServer(Options{Log: func(format string, args ...any) {
			if strings.HasPrefix(format, "panic") {
				t.Fatalf(format, args...)
			}
		}})
		s.out = NewWriter(&out)
		var env envelope
		if json.Unmarshal(body, &env) == nil && (env.Command == "launch" || env.Command == "attach" || env.Command == "restart") {
			return // these start programs
		}
		s.handle(body)
		s.Close()
	})
}
