// Package client is a Go client for TCF agents such as `sonde agent`: it
// connects, exchanges Locator Hello, sends commands (pipelined, one token
// each), decodes results with exact integers, and delivers events.
//
//	c, err := client.Dial(ctx, "127.0.0.1:1534", client.Options{})
//	res, err := c.Call(ctx, "Diagnostics", "echo", "hi")
//	var s string
//	err = res.Decode(&s)
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sondedbg/sonde/tcf"
)

// Options configure a Client. The zero value is usable.
type Options struct {
	// Services is the list sent in the client's Hello. The client itself
	// serves no commands; list "ZeroCopy" to receive binary fields raw.
	Services []string
	// MaxMessageSize bounds one incoming message (default tcf.DefaultMaxMessageSize).
	MaxMessageSize int
	// NoHello skips the Hello exchange (for testing agents' handling of
	// commands sent before Hello). The client still reads the agent's Hello.
	NoHello bool
	// ReadSpin is how long the reader keeps polling the socket for the next
	// message once it has handled what came, before it sleeps until the
	// poller wakes it (0: it never polls). Polling spends CPU while the
	// agent works, and saves the wake-up of a sleeping thread per reply
	// (tens of microseconds on a VM): for benchmarks and scripts that
	// drive an agent as fast as they can. Between polls the reader lets
	// other threads of the machine run (sched_yield), and this process's
	// goroutines once they are ready.
	ReadSpin time.Duration
	// TLS configures the SSL transport ("SSL:host:port" addresses); see
	// tcf.ClientTLS. Required for SSL.
	TLS *tls.Config
}

// ErrClosed is returned for commands pending or sent after the client closed.
var ErrClosed = errors.New("tcf client: closed")

// ErrNotRecognized is the error of a command answered with N (unknown
// service or command). It is an error report with code INV_COMMAND, the
// way other TCF clients present it.
var ErrNotRecognized = &tcf.ErrorReport{Code: tcf.CodeInvalidCommand, Format: "Command is not recognized"}

// Client is a connection to a TCF agent. Its methods are safe for
// concurrent use.
type Client struct {
	conn net.Conn
	// rw is conn's socket read and written with raw system calls
	// (tcf.RawSocket), or conn itself when it has none (net.Pipe). Go's own
	// socket calls tell the scheduler about every system call, and the
	// first one after the client sat idle (waiting for a reply) wakes the
	// runtime's monitor thread, which then polls every 20 µs for a
	// millisecond, taking turns on the CPUs with the agent and the program.
	// Against `sonde agent` on a 2-CPU VM (tcfbench, 5 alternating pairs):
	// breakpoint hits 8.0-9.6k -> 9.0-12.0k/s, warm 57-frame stack rounds
	// 0.45-0.48 -> 0.42-0.49 ms.
	rw io.ReadWriter
	rd *tcf.Reader
	// spin is rw when the reader polls it (Options.ReadSpin).
	spin *tcf.RawSocket

	mu        sync.Mutex
	out       []byte
	spare     []byte
	writing   bool
	wake      chan struct{}
	pending   map[uint64]*Pending // by token
	nextToken uint64
	closed    bool
	err       error // why the client closed
	handlers  []eventHandler
	hello     []string
	helloCh   chan struct{}
	zeroCopy  bool        // asked for ZeroCopy (Options.Services)
	peerZC    bool        // and the agent offers it: binary arguments go raw
	b         tcf.Builder // builds commands into out (under mu)
	pendBlock []Pending   // where the next Pendings come from (under mu)
	slab      []byte      // where replies' fields are copied (reader goroutine only)

	readDone  chan struct{}
	writeDone chan struct{}
}

type eventHandler struct {
	service, name string
	f             func(Event)
}

// Dial connects to addr, sends Hello and waits for the agent's Hello
// (bounded by ctx). addr names a transport as the C TCF agent does:
// "host:port" or "TCP:host:port", "UNIX:/path/to/socket", or
// "SSL:host:port" (TLS, configured by opts.TLS).
func Dial(ctx context.Context, addr string, opts Options) (*Client, error) {
	conn, err := dialTransport(ctx, addr, opts)
	if err != nil {
		return nil, err
	}
	c := New(conn, opts)
	if err := c.WaitHello(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// dialTransport connects to addr on its transport.
func dialTransport(ctx context.Context, addr string, opts Options) (net.Conn, error) {
	var d net.Dialer
	transport, rest, ok := strings.Cut(addr, ":")
	switch {
	case ok && strings.EqualFold(transport, "UNIX"):
		return d.DialContext(ctx, "unix", rest)
	case ok && strings.EqualFold(transport, "SSL"):
		if opts.TLS == nil {
			return nil, fmt.Errorf("tcf client: %s: the SSL transport needs Options.TLS", addr)
		}
		td := tls.Dialer{NetDialer: &d, Config: opts.TLS}
		return td.DialContext(ctx, "tcp", rest)
	case ok && strings.EqualFold(transport, "TCP") && strings.Count(rest, ":") >= 1:
		return d.DialContext(ctx, "tcp", rest)
	}
	return d.DialContext(ctx, "tcp", addr)
}

// New runs a client over an established connection and sends its Hello
// (unless opts.NoHello). It does not wait for the agent's Hello: see WaitHello.
func New(conn net.Conn, opts Options) *Client {
	// Raw system calls on the socket where it has one: see Client.rw.
	var rw io.ReadWriter = conn
	if rs := tcf.NewRawSocket(conn); rs != nil {
		rw = rs
	}
	c := &Client{
		conn:      conn,
		rw:        rw,
		rd:        tcf.NewReader(rw, opts.MaxMessageSize),
		wake:      make(chan struct{}, 1),
		pending:   map[uint64]*Pending{},
		helloCh:   make(chan struct{}),
		readDone:  make(chan struct{}),
		writeDone: make(chan struct{}),
	}
	if rs, ok := rw.(*tcf.RawSocket); ok && opts.ReadSpin > 0 {
		rs.Spin = opts.ReadSpin
		c.spin = rs
	}
	for _, s := range opts.Services {
		if s == "ZeroCopy" {
			c.zeroCopy = true
		}
	}
	if !opts.NoHello {
		names := opts.Services
		if names == nil {
			names = []string{}
		}
		var b tcf.Builder
		b.Event("Locator", "Hello").Data(names).End()
		msg, _ := b.Bytes()
		c.out = append(c.out, msg...)
	}
	go c.writeLoop()
	go c.readLoop()
	c.signal()
	return c
}

// WaitHello waits for the agent's Hello.
func (c *Client) WaitHello(ctx context.Context) error {
	select {
	case <-c.helloCh:
		return nil
	case <-c.readDone:
		select {
		case <-c.helloCh: // the Hello came before the connection ended
			return nil
		default:
			return c.Err()
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Services is the agent's service list from its Hello (nil before it came).
func (c *Client) Services() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hello
}

// Err is why the client closed (nil while open; ErrClosed after Close).
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Done is closed when the connection is gone.
func (c *Client) Done() <-chan struct{} { return c.readDone }

// Pending is a command sent and not yet answered.
type Pending struct {
	c     *Client
	token uint64
	// answered is set once res or err is final. done is made only for a
	// goroutine that waits before then (under c.mu, which also guards its
	// closing): in a pipelined wave most replies are in before anyone waits
	// for them, and a channel per command was a fifth of a stack round's
	// allocations.
	answered atomic.Bool
	done     chan struct{}
	res      *Result
	result   Result       // res points here: one allocation less per reply
	fields   [4]tcf.Field // result.Fields when the reply has no more fields
	err      error
}

// Wait waits for the command's result. A command answered with N gives
// ErrNotRecognized; a result with an error field is not an error here (use
// Result.Decode).
func (p *Pending) Wait(ctx context.Context) (*Result, error) {
	if p.answered.Load() {
		return p.res, p.err
	}
	select {
	case <-p.Done():
		return p.res, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Done is closed when the result arrived or the client closed.
func (p *Pending) Done() <-chan struct{} {
	if p.answered.Load() {
		return closedChan
	}
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if p.answered.Load() {
		return closedChan
	}
	if p.done == nil {
		p.done = make(chan struct{})
	}
	return p.done
}

// answer marks p answered (its res or err set before) and wakes whoever
// waits. c.mu must be held.
func (p *Pending) answer() {
	p.answered.Store(true)
	if p.done != nil {
		close(p.done)
	}
}

// closedChan is the Done of every answered command.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Token is the command's token, as sent.
func (p *Pending) Token() string { return strconv.FormatUint(p.token, 10) }

// Send queues a command without waiting (commands are pipelined). Arguments
// are encoded as JSON: integers exact, []byte as base64 (use tcf.Builder
// through SendRaw for "(N)" binary arguments).
func (c *Client) Send(service, command string, args ...any) (*Pending, error) {
	return c.send(service, command, args, nil, true)
}

// SendFields queues a command whose argument fields are written by fill
// (e.g. b.Binary(data) for a raw binary argument when ZeroCopy is on).
func (c *Client) SendFields(service, command string, fill func(b *tcf.Builder)) (*Pending, error) {
	return c.send(service, command, nil, fill, true)
}

// send queues a command with args (or the fields fill writes). wake=false
// leaves the writing to the caller (Call writes inline, saving a hop).
func (c *Client) send(service, command string, args []any, fill func(b *tcf.Builder), wake bool) (*Pending, error) {
	c.mu.Lock()
	if c.closed {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.nextToken++
	p := c.newPending()
	start := len(c.out)
	b := &c.b
	b.ZeroCopy = c.peerZC
	b.Start(c.out) // build straight into the outgoing buffer
	b.CommandNumbered(p.token, service, command)
	for _, a := range args {
		b.Data(a)
	}
	if fill != nil {
		fill(b)
	}
	b.End()
	msg, err := b.Bytes()
	b.Start(nil) // out is not the builder's to keep
	if err != nil {
		c.out = c.out[:start]
		c.mu.Unlock()
		return nil, err
	}
	c.out = msg
	c.pending[p.token] = p
	if start == 0 && wake {
		c.signal()
	}
	// A client that polls for replies sends a long burst in pieces: the
	// agent (polling too, on another CPU) starts on the first commands
	// while the rest are built. The writer goroutine would write only
	// once this one waits, which with one P is after the whole burst.
	piece := c.spin != nil && wake && len(c.out) >= sendChunk && !c.writing
	c.mu.Unlock()
	if piece {
		c.tryFlush()
	}
	return p, nil
}

// tryFlush writes what is queued as far as the socket takes it now, never
// waiting (the caller may be the reader goroutine, in an event handler: a
// write that waited for the agent to read could wait for ever while the
// agent waits for it to read). What is left goes to the writer goroutine.
func (c *Client) tryFlush() {
	c.mu.Lock()
	if c.writing || len(c.out) == 0 || c.closed {
		c.mu.Unlock()
		return
	}
	c.writing = true
	buf := c.out
	c.out, c.spare = c.spare[:0], nil
	c.mu.Unlock()
	n, _ := c.spin.TryWrite(buf) // an error is the writer's to meet
	c.mu.Lock()
	c.writing = false
	if n < len(buf) {
		c.out = append(append([]byte(nil), buf[n:]...), c.out...)
	} else if c.spare == nil && cap(buf) <= 1<<20 {
		c.spare = buf[:0]
	}
	more := len(c.out) > 0
	c.mu.Unlock()
	if more {
		c.signal()
	}
}

// sendChunk is the size of the pieces a polling client writes a burst in.
const sendChunk = 4 << 10

// newPending is a Pending for the next token (c.mu held). Pendings are
// carved from blocks of pendingBlock: one allocation per command was a
// fifth of sending one (each is ~200 bytes with the reply's fields
// inline), and a round of a stack view sends ~170. A block stays in memory
// while any of its Pendings is referenced, ~13 KB at most per such command.
func (c *Client) newPending() *Pending {
	if len(c.pendBlock) == 0 {
		c.pendBlock = make([]Pending, pendingBlock)
	}
	p := &c.pendBlock[0]
	c.pendBlock = c.pendBlock[1:]
	p.c, p.token = c, c.nextToken
	return p
}

const pendingBlock = 64

// Call sends a command and waits for its result.
func (c *Client) Call(ctx context.Context, service, command string, args ...any) (*Result, error) {
	p, err := c.SendNow(service, command, args...)
	if err != nil {
		return nil, err
	}
	return p.Wait(ctx)
}

// SendRaw writes bytes to the agent as they are (for tests of bad input).
func (c *Client) SendRaw(p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.err
	}
	if len(c.out) == 0 {
		c.signal()
	}
	c.out = append(c.out, p...)
	return nil
}

// OnEvent registers f for events of service named name ("" matches any
// service or name). f runs on the client's reader goroutine, in the order
// events arrive; it must not block for long or call Wait.
func (c *Client) OnEvent(service, name string, f func(Event)) {
	c.mu.Lock()
	c.handlers = append(c.handlers, eventHandler{service, name, f})
	c.mu.Unlock()
}

// Close closes the connection and fails pending commands with ErrClosed.
func (c *Client) Close() error {
	c.shut(ErrClosed)
	<-c.readDone
	<-c.writeDone
	return nil
}

func (c *Client) shut(err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.err = err
	for _, p := range c.pending {
		p.err = err
		p.answer()
	}
	c.pending = nil
	c.mu.Unlock()
	c.conn.Close()
	c.signal()
}

func (c *Client) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// flushOnce writes what is queued unless another goroutine is writing
// (the writing flag keeps messages in queue order).
func (c *Client) flushOnce() error {
	c.mu.Lock()
	if c.writing || len(c.out) == 0 || c.closed {
		c.mu.Unlock()
		return nil
	}
	c.writing = true
	buf := c.out
	c.out, c.spare = c.spare[:0], nil
	c.mu.Unlock()
	_, err := c.rw.Write(buf)
	c.mu.Lock()
	c.writing = false
	if c.spare == nil && cap(buf) <= 1<<20 {
		c.spare = buf[:0]
	}
	more := len(c.out) > 0
	c.mu.Unlock()
	if more {
		c.signal()
	}
	if err != nil {
		c.shut(fmt.Errorf("tcf client: write: %w", err))
	}
	return err
}

func (c *Client) writeLoop() {
	defer close(c.writeDone)
	for {
		c.mu.Lock()
		for !c.closed && (c.writing || len(c.out) == 0) {
			c.mu.Unlock()
			<-c.wake
			c.mu.Lock()
		}
		if c.closed {
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if c.flushOnce() != nil {
			return
		}
	}
}

func (c *Client) readLoop() {
	defer close(c.readDone)
	for {
		if c.spin != nil && !c.rd.Buffered() {
			// Everything that came is handled: let the goroutines it made
			// ready run first (with one P they would otherwise wait for
			// the spin), then poll for the next message.
			runtime.Gosched()
			c.spin.SpinOnce()
		}
		m, err := c.rd.ReadMessage()
		if err != nil {
			if err == io.EOF {
				err = fmt.Errorf("tcf client: agent closed the connection: %w", io.EOF)
			}
			c.shut(err)
			return
		}
		c.handle(m)
	}
}

func (c *Client) handle(m *tcf.Message) {
	switch m.Kind {
	case 'R', 'N':
		tok, ok := parseToken(m.Token)
		if !ok {
			return // not a token this client sent
		}
		c.mu.Lock()
		p := c.pending[tok]
		delete(c.pending, tok)
		c.mu.Unlock()
		if p == nil {
			return
		}
		if m.Kind == 'N' {
			p.err = ErrNotRecognized
		} else {
			p.result.Fields = c.ownFields(p.fields[:0], m)
			p.res = &p.result
		}
		c.mu.Lock()
		p.answer()
		c.mu.Unlock()
	case 'E':
		ev := Event{Service: string(m.Service), Name: string(m.Name), Fields: copyFields(m.Fields)}
		if ev.Service == "Locator" && ev.Name == "Hello" {
			var names []string
			a := tcf.NewArgs(ev.Fields)
			names = a.Strings()
			c.mu.Lock()
			first := c.hello == nil
			c.hello = names
			if c.hello == nil {
				c.hello = []string{}
			}
			c.peerZC = c.zeroCopy && containsString(c.hello, "ZeroCopy")
			c.mu.Unlock()
			if first {
				close(c.helloCh)
			}
		}
		c.mu.Lock()
		hs := c.handlers
		c.mu.Unlock()
		for _, h := range hs {
			if (h.service == "" || h.service == ev.Service) && (h.name == "" || h.name == ev.Name) {
				h.f(ev)
			}
		}
	}
}

// ownFields returns m's fields in memory the Result may keep, appended to
// dst: small ones are copied into a block shared with other replies (a
// stack round gets ~170 small replies: one allocation each was 15% of the
// client's), middling ones get their own copy, and large messages are
// detached from the reader instead of copied.
func (c *Client) ownFields(dst []tcf.Field, m *tcf.Message) []tcf.Field {
	n := 0
	for _, f := range m.Fields {
		n += len(f.Data)
	}
	switch {
	case n <= maxSlabbed:
		if len(c.slab)+n > cap(c.slab) {
			c.slab = make([]byte, 0, slabSize)
		}
		for _, f := range m.Fields {
			at := len(c.slab)
			c.slab = append(c.slab, f.Data...)
			// A capped slice: appending to a result's bytes copies them
			// rather than overwriting the next reply's.
			dst = append(dst, tcf.Field{Data: c.slab[at:len(c.slab):len(c.slab)], Binary: f.Binary})
		}
		return dst
	case n < 64<<10:
		return appendFieldCopies(dst, m.Fields)
	}
	fs := m.Fields
	c.rd.Detach()
	return fs
}

// Replies of up to maxSlabbed bytes share blocks of slabSize: small, so that
// a result kept for long keeps little else alive with it.
const (
	slabSize   = 4 << 10
	maxSlabbed = 1 << 10
)

// parseToken reads a token this client made (a decimal number).
func parseToken(t []byte) (uint64, bool) {
	if len(t) == 0 || len(t) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range t {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

func copyFields(fs []tcf.Field) []tcf.Field {
	return appendFieldCopies(make([]tcf.Field, 0, len(fs)), fs)
}

// appendFieldCopies appends copies of fs to dst, their bytes in one block.
func appendFieldCopies(dst, fs []tcf.Field) []tcf.Field {
	n := 0
	for _, f := range fs {
		n += len(f.Data)
	}
	buf := make([]byte, 0, n)
	for _, f := range fs {
		buf = append(buf, f.Data...)
		dst = append(dst, tcf.Field{Data: buf[len(buf)-len(f.Data) : len(buf) : len(buf)], Binary: f.Binary})
	}
	return dst
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Event is an event received from the agent.
type Event struct {
	Service, Name string
	Fields        []tcf.Field
}

// Args decodes the event's arguments.
func (e Event) Args() *tcf.Args { return tcf.NewArgs(e.Fields) }

// Decode decodes the event's arguments like Result.Decode.
func (e Event) Decode(dst ...any) error { return decodeFields(e.Fields, dst) }

// Result is a command's result fields.
type Result struct {
	Fields []tcf.Field
}

// Args decodes the result fields one by one.
func (r *Result) Args() *tcf.Args { return tcf.NewArgs(r.Fields) }

// Decode decodes the result fields into dst, one pointer per field, and
// checks the field count. Pointer types: *error (an error report, nil when
// empty), *string, *uint64, *int64, *int, *bool, *[]byte (base64 or raw
// binary), *[]string, *tcf.Props, *json.RawMessage, or any pointer
// encoding/json decodes into (numbers exact as json.Number in interfaces).
// A nil dst skips its field unread.
func (r *Result) Decode(dst ...any) error { return decodeFields(r.Fields, dst) }

func decodeFields(fields []tcf.Field, dst []any) error {
	a := tcf.NewArgs(fields)
	for _, d := range dst {
		switch p := d.(type) {
		case nil:
			a.Ignore() // not asked for: not checked either
		case *error:
			if rep := a.Report(); rep != nil {
				*p = rep
			} else {
				*p = nil
			}
		case *string:
			*p = a.String()
		case *uint64:
			*p = a.Uint64()
		case *int64:
			*p = a.Int64()
		case *int:
			*p = a.Int()
		case *bool:
			*p = a.Bool()
		case *[]byte:
			*p = a.Binary()
		case *[]string:
			*p = a.Strings()
		case *tcf.Props:
			*p = a.Props()
		default:
			a.JSON(d)
		}
	}
	if err := a.End(); err != nil {
		return fmt.Errorf("tcf client: decoding result: %w", err)
	}
	return nil
}

// Raw returns the result fields as they came, for golden comparisons:
// JSON texts joined by NUL bytes (binary fields as "(N)" plus the bytes).
func (r *Result) Raw() []byte {
	var b bytes.Buffer
	for _, f := range r.Fields {
		if f.Binary {
			fmt.Fprintf(&b, "(%d)", len(f.Data))
		}
		b.Write(f.Data)
		b.WriteByte(0)
	}
	return b.Bytes()
}

// dialTimeout is used by tests and tools that want a short default.
const dialTimeout = 5 * time.Second

// DialTimeout is Dial with a timeout instead of a context.
func DialTimeout(addr string, opts Options) (*Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	return Dial(ctx, addr, opts)
}
