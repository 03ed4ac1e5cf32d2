// Package dap is sonde's Debug Adapter Protocol server: the front end that
// VS Code, Neovim (nvim-dap), Zed, Helix and Emacs (dape) start to debug C,
// C++ and Rust programs, live or from a core file. It speaks the protocol
// (go-dap's message types over its own bounded framing) and drives the
// target model, the session and the expression evaluator; it never goes
// through the TCF layer.
//
// One Server serves one client over one stream. Requests are handled one at
// a time, in order; target events (stops, exits, library loads, program
// output) become DAP events as they happen. Argument names follow lldb-dap
// so that existing editor configurations carry over.
package dap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"sync/atomic"

	godap "github.com/google/go-dap"
)

// Options configure a Server.
type Options struct {
	// DebugDirs are searched for separate debug files (default
	// /usr/lib/debug); launch and attach arguments may add more.
	DebugDirs []string
	// Log, when set, receives the server's own diagnostics (never the
	// client's stream).
	Log func(format string, args ...any)
}

// Server is one DAP session with one client.
type Server struct {
	opts Options
	in   *Reader
	out  *Writer

	// client capabilities from initialize.
	client godap.InitializeRequestArguments

	mu   sync.Mutex
	dbg  *debuggee // nil before launch/attach and after disconnect
	done bool      // disconnect answered: the serve loop ends

	handles handleTable
	bps     breakpointTable

	held heldEvents // events of a resume held until its response is sent

	stops atomic.Int64 // stopped events sent (profile labels: the first stop's requests)
}

// NewServer makes a server for one client.
func NewServer(opts Options) *Server {
	return &Server{opts: opts}
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Log != nil {
		s.opts.Log(format, args...)
	}
}

// envelope is the part of every message the dispatcher reads first.
type envelope struct {
	Seq       int             `json:"seq"`
	Type      string          `json:"type"`
	Command   string          `json:"command"`
	Arguments json.RawMessage `json:"arguments"`
}

// request is one decoded client request.
type request struct {
	seq     int
	command string
	args    json.RawMessage
}

// decode unmarshals the request's arguments into v; absent arguments leave
// v as it is. A type mismatch is an error naming the field.
func (r *request) decode(v any) error {
	if len(r.args) == 0 || string(r.args) == "null" {
		return nil
	}
	if err := json.Unmarshal(r.args, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s: argument %q must be %s, not %s", r.command, te.Field, kindName(te.Type.Kind().String()), te.Value)
		}
		return fmt.Errorf("%s: bad arguments: %v", r.command, err)
	}
	return nil
}

func kindName(k string) string {
	switch k {
	case "int", "int64", "uint64", "int32":
		return "an integer"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return k
}

// handler answers one request: the response body (nil for none) or an
// error that becomes an error response.
type handler func(s *Server, r *request) (any, error)

var handlers map[string]handler

func init() {
	handlers = map[string]handler{
		"initialize":                (*Server).initialize,
		"launch":                    (*Server).launch,
		"attach":                    (*Server).attach,
		"configurationDone":         (*Server).configurationDone,
		"disconnect":                (*Server).disconnect,
		"terminate":                 (*Server).terminate,
		"setBreakpoints":            (*Server).setBreakpoints,
		"setFunctionBreakpoints":    (*Server).setFunctionBreakpoints,
		"setInstructionBreakpoints": (*Server).setInstructionBreakpoints,
		"setExceptionBreakpoints":   (*Server).setExceptionBreakpoints,
		"dataBreakpointInfo":        (*Server).dataBreakpointInfo,
		"setDataBreakpoints":        (*Server).setDataBreakpoints,
		"threads":                   (*Server).threads,
		"stackTrace":                (*Server).stackTrace,
		"scopes":                    (*Server).scopes,
		"variables":                 (*Server).variables,
		"evaluate":                  (*Server).evaluate,
		"setVariable":               (*Server).setVariable,
		"setExpression":             (*Server).setExpression,
		"continue":                  (*Server).continue_,
		"next":                      (*Server).next,
		"stepIn":                    (*Server).stepIn,
		"stepOut":                   (*Server).stepOut,
		"pause":                     (*Server).pause,
		"readMemory":                (*Server).readMemory,
		"writeMemory":               (*Server).writeMemory,
		"disassemble":               (*Server).disassemble,
		"modules":                   (*Server).modules,
		"loadedSources":             (*Server).loadedSources,
		"exceptionInfo":             (*Server).exceptionInfo,
		"source":                    (*Server).source,
		"completions":               (*Server).completions,
		"stepInTargets":             (*Server).stepInTargets,
		"restart":                   (*Server).restart,
	}
}

// Serve answers requests read from r with responses and events written to
// w until the client disconnects or the stream ends. A client that vanishes
// leaves the target as it asked: a launched program is killed, an attached
// one detached.
func (s *Server) Serve(r io.Reader, w io.Writer) error {
	s.in = NewReader(r)
	s.out = NewWriter(w)
	defer s.shutdown()
	for {
		body, err := s.in.Read()
		if err != nil {
			var fe *FrameError
			if errors.As(err, &fe) {
				s.logf("%v", err)
				s.sendError(0, "", 1, fe.Error())
				continue
			}
			if err == io.EOF {
				return nil
			}
			return err
		}
		s.handle(body)
		s.mu.Lock()
		done := s.done
		s.mu.Unlock()
		if done {
			return nil
		}
	}
}

// handle decodes and answers one message; it never panics on input.
func (s *Server) handle(body []byte) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		s.sendError(0, "", 1, fmt.Sprintf("malformed message: %v", err))
		return
	}
	if env.Type != "request" {
		if env.Type == "response" {
			return // answers to our reverse requests (runInTerminal)
		}
		s.sendError(env.Seq, env.Command, 1, fmt.Sprintf("message type %q is not a request", env.Type))
		return
	}
	h := handlers[env.Command]
	if h == nil {
		s.sendError(env.Seq, env.Command, 1, fmt.Sprintf("unknown request %q", env.Command))
		return
	}
	req := &request{seq: env.Seq, command: env.Command, args: env.Arguments}
	var resp any
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				s.logf("panic in %s: %v\n%s", env.Command, p, debug.Stack())
				err = fmt.Errorf("internal error in %s: %v", env.Command, p)
			}
		}()
		// Each request is a region of a runtime trace and carries its name
		// as a profile label (req), so that a trace or CPU profile of a
		// session (SONDE_CPUPROFILE) splits by request, and by stop: stop
		// "first" (cold: at or before the first stopped event) or "later".
		defer trace.StartRegion(context.Background(), env.Command).End()
		stop := "later"
		if s.stops.Load() <= 1 {
			stop = "first"
		}
		pprof.Do(context.Background(), pprof.Labels("req", env.Command, "stop", stop), func(context.Context) { resp, err = h(s, req) })
		return err
	}()
	if err != nil {
		s.sendError(env.Seq, env.Command, 2, userMessage(err))
		return
	}
	s.sendResponse(env.Seq, env.Command, resp)
	if f, ok := resp.(afterResponse); ok {
		f.after()
	}
}

// afterResponse is a response body with work to do once the response is
// sent (events that must follow it: initialized after launch, stopped after
// configurationDone).
type afterResponse interface{ after() }

// withAfter is a response body plus what follows it.
type withAfter struct {
	body any
	then func()
}

func (w withAfter) after()                       { w.then() }
func (w withAfter) MarshalJSON() ([]byte, error) { return json.Marshal(w.body) }

type response struct {
	godap.Response
	Body any `json:"body,omitempty"`
}

type event struct {
	godap.Event
	Body any `json:"body,omitempty"`
}

func (s *Server) sendResponse(seq int, command string, body any) {
	if w, ok := body.(withAfter); ok && w.body == nil {
		body = nil
	}
	m := &response{Response: godap.Response{ProtocolMessage: godap.ProtocolMessage{Type: "response"},
		RequestSeq: seq, Success: true, Command: command}, Body: body}
	s.send(&m.Response.ProtocolMessage, m)
}

// showUser are the requests whose failure the client should put in front
// of the user (a notification); others (an evaluation in a watch, a
// variable that cannot be set) are shown where they were asked.
var showUser = map[string]bool{"launch": true, "attach": true, "configurationDone": true, "restart": true, "disconnect": true, "terminate": true}

func (s *Server) sendError(seq int, command string, id int, msg string) {
	m := &godap.ErrorResponse{Response: godap.Response{ProtocolMessage: godap.ProtocolMessage{Type: "response"},
		RequestSeq: seq, Success: false, Command: command, Message: msg},
		Body: godap.ErrorResponseBody{Error: &godap.ErrorMessage{Id: id, Format: msg, ShowUser: showUser[command]}}}
	s.send(&m.Response.ProtocolMessage, m)
}

// sendEvent sends an event; it may be called from any goroutine. While a
// resume request is being answered, events wait for its response.
func (s *Server) sendEvent(name string, body any) {
	m := &event{Event: godap.Event{ProtocolMessage: godap.ProtocolMessage{Type: "event"}, Event: name}, Body: body}
	if name == "stopped" {
		s.stops.Add(1)
	}
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	if s.held.holding {
		s.held.queue = append(s.held.queue, m)
		return
	}
	s.send(&m.Event.ProtocolMessage, m)
}

// heldEvents orders a resume's response before the events it causes: a
// thread that hits its next breakpoint at once would otherwise be reported
// stopped before the continue is answered, and VS Code, which marks the
// threads running when the response comes, would show a stopped program as
// running (and a DebugClient waiting for the stop after the response would
// miss it).
type heldEvents struct {
	mu      sync.Mutex
	holding bool
	queue   []*event
}

// holdEvents makes events wait; the resume request returns
// s.afterResume(body) (or calls releaseEvents when it fails), which sends
// them once its response is out. It never blocks the goroutine sending an
// event: the tracer thread may be the one sending, and the resume needs it.
func (s *Server) holdEvents() {
	s.held.mu.Lock()
	s.held.holding = true
	s.held.mu.Unlock()
}

// releaseEvents sends the held events, in order, before any later one.
func (s *Server) releaseEvents() {
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	for _, m := range s.held.queue {
		s.send(&m.Event.ProtocolMessage, m)
	}
	s.held.queue, s.held.holding = nil, false
}

// afterResume is a resume request's response: body, then the held events.
func (s *Server) afterResume(body any, err error) (any, error) {
	if err != nil {
		s.releaseEvents()
		return nil, err
	}
	return withAfter{body: body, then: s.releaseEvents}, nil
}

// send numbers and writes m.
func (s *Server) send(pm *godap.ProtocolMessage, m godap.Message) {
	if s.out == nil {
		return
	}
	if err := s.out.Send(pm, m); err != nil {
		s.logf("write: %v", err)
	}
}

// Close leaves the target as a vanished client's launch or attach implies:
// a launched program is killed, an attached one detached. Serve calls it
// when the stream ends; a signal handler may call it too.
func (s *Server) Close() { s.shutdown() }

// shutdown leaves the target as the client asked (or, for a client that
// vanished, as its launch or attach implies).
func (s *Server) shutdown() {
	s.mu.Lock()
	d := s.dbg
	s.dbg = nil
	s.mu.Unlock()
	if d != nil {
		d.end(d.launched)
	}
}

// recoverIn keeps a panic in code that runs for the target (an event
// listener, a breakpoint's hit handler) from taking the adapter down with
// the target in an unknown state: it is logged and reported on the console.
func (s *Server) recoverIn(where string) {
	if p := recover(); p != nil {
		s.logf("panic in %s: %v\n%s", where, p, debug.Stack())
		s.output("console", fmt.Sprintf("sonde: internal error in %s: %v\n", where, p))
	}
}

// recoverIn2 reports a panic already recovered.
func (s *Server) recoverIn2(where string, p any) {
	s.logf("panic in %s: %v\n%s", where, p, debug.Stack())
	s.output("console", fmt.Sprintf("sonde: internal error in %s: %v\n", where, p))
}

// output sends text as an output event.
func (s *Server) output(category, text string) {
	s.sendEvent("output", godap.OutputEventBody{Category: category, Output: text})
}

// errorf makes an error for an error response.
func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

var errNoDebuggee = errors.New("no program is being debugged: send launch or attach first")

// current returns the debuggee, or errNoDebuggee.
func (s *Server) current() (*debuggee, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dbg == nil {
		return nil, errNoDebuggee
	}
	return s.dbg, nil
}
