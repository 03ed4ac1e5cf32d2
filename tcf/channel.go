package tcf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"time"
)

// closeFlushTimeout bounds how long a closing channel keeps trying to write
// its last messages (the end-of-stream report) to a peer that does not read.
const closeFlushTimeout = 2 * time.Second

// Channel is one client connection. Commands are read and executed in
// arrival order on the channel's reader goroutine; replies and events are
// queued (bounded) and written by its writer goroutine.
type Channel struct {
	srv    *Server
	conn   net.Conn
	sock   *RawSocket // conn's socket; nil if it has none (then conn is used)
	rw     io.ReadWriter
	id     string
	log    *slog.Logger
	rd     *Reader
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	out       []byte // bytes waiting for the writer
	spare     []byte
	closing   bool
	writing   bool // a goroutine is in conn.Write (see flushOnce)
	reason    error
	wake      chan struct{}
	writeDone chan struct{}
	done      chan struct{}
	onClose   []func()
	closed    bool // hooks have run

	// writeEnded is signalled (with mu) when a write ends and writing is
	// false again; the reader waits on it in waitWrite.
	writeEnded sync.Cond

	// behind is set while a message queued by enqueueBehind waits for
	// another write; behindTimer wakes the writer if none comes.
	behind      bool
	behindTimer *time.Timer

	// freeCall is a finished Call the reader goroutine may reuse, and strs
	// the strings its commands' arguments decoded lately (reader goroutine
	// only).
	freeCall *Call
	strs     stringCache

	// peer state, written by the reader goroutine, read under mu by others
	peerHello    bool
	peerServices []string
	zeroCopy     bool

	// peer is who is connected (set before the channel runs).
	peer Peer
	// helloTimer closes the channel if the peer's Hello does not come.
	helloTimer *time.Timer
	// outCharged is what the queued output holds of the server's output
	// budget, outPeak the most it held (under mu).
	outCharged int
	outPeak    int
}

func newChannel(s *Server, conn net.Conn, n uint64) *Channel {
	id := fmt.Sprintf("C%d", n)
	ctx, cancel := context.WithCancel(context.Background())
	sock := NewRawSocket(conn)
	var rw io.ReadWriter = conn
	if sock != nil {
		sock.Spin = max(s.cfg.ReadSpin, 0)
		// The agent's end moves away from a polling client on its CPU.
		sock.AvoidPeer = true
		rw = sock
	}
	c := &Channel{
		sock:      sock,
		rw:        rw,
		ctx:       ctx,
		cancel:    cancel,
		srv:       s,
		conn:      conn,
		id:        id,
		log:       s.log.With("channel", id, "peer", conn.RemoteAddr().String()),
		rd:        NewReader(rw, min(s.cfg.MaxPreHelloMessage, s.cfg.MaxMessageSize)),
		wake:      make(chan struct{}, 1),
		writeDone: make(chan struct{}),
		done:      make(chan struct{}),
	}
	c.writeEnded.L = &c.mu
	if sock != nil {
		sock.BeforeWait = c.flushBeforeWait
	}
	c.rd.SetBudget(s.inBudget)
	return c
}

// Peer is who is connected on the channel: the local user (for loopback
// TCP and Unix-domain peers) or the remote address (TLS and other peers).
func (c *Channel) Peer() Peer { return c.peer }

// startHelloTimer closes the channel if the peer has not said Hello within
// d: a connection that never speaks must not hold a slot.
func (c *Channel) startHelloTimer(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.helloTimer = time.AfterFunc(d, func() {
		c.mu.Lock()
		hello := c.peerHello
		c.mu.Unlock()
		if !hello {
			c.Close(&closeReason{code: CodeProtocol, msg: fmt.Sprintf("no Locator Hello from the peer within %v", d)})
		}
	})
}

// charge counts n more queued bytes against the server's output budget
// (c.mu held); force charges even over the limit (a closing channel's
// end-of-stream report). False means the budget is exhausted.
func (c *Channel) charge(n int, force bool) bool {
	b := c.srv.outBudget
	switch {
	case force:
		b.used.Add(int64(n))
	case b.Take(n):
	case b.limit > 0 && int64(c.outCharged+n) <= b.limit/4 && b.TakeUpTo(n, 2*b.limit):
		// The budget is spent, but not by this channel: whoever holds
		// the most of it is the one that does not read. Close that one
		// (soon, without the locks held here) rather than this one,
		// which may go a little over meanwhile (never past twice the
		// limit).
		go c.srv.evictLargestQueue()
	default:
		return false
	}
	c.outCharged += n
	c.outPeak = max(c.outPeak, c.outCharged)
	return true
}

// refund gives back n written or dropped bytes (c.mu held).
func (c *Channel) refund(n int) {
	n = min(n, c.outCharged)
	c.outCharged -= n
	c.srv.outBudget.Give(n)
}

// flushBeforeWait sends queued replies when the reader is about to wait for
// input while holding some (more input was buffered, but not a whole
// message): the peer may want them before it sends the rest.
func (c *Channel) flushBeforeWait() {
	if err := c.flushOnce(); err != nil {
		c.closeWith(&closeReason{code: CodeChannelClosed, msg: "write failed", err: err}, true)
	}
}

// ID names the channel ("C1", "C2", ...), unique within the server. Services
// use the *Channel itself as the key of per-channel state.
func (c *Channel) ID() string { return c.id }

// String is the channel's ID.
func (c *Channel) String() string { return c.id }

// Logger is the channel's logger (with channel and peer attributes).
func (c *Channel) Logger() *slog.Logger { return c.log }

// Server is the server the channel belongs to.
func (c *Channel) Server() *Server { return c.srv }

// RemoteAddr is the peer's address.
func (c *Channel) RemoteAddr() net.Addr { return c.conn.RemoteAddr() }

// LocalAddr is the agent's address on this channel.
func (c *Channel) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// Context is cancelled when the channel starts closing; long operations
// done for the channel's commands can watch it.
func (c *Channel) Context() context.Context { return c.ctx }

// Done is closed when the channel is closed and its close hooks have run.
func (c *Channel) Done() <-chan struct{} { return c.done }

// PeerServices is the service list from the peer's latest Hello (nil before).
func (c *Channel) PeerServices() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peerServices
}

// OnClose registers f to run once when the channel closes, after its last
// command handler returned (hooks run on the reader goroutine, in
// registration order). If the channel is already closed f runs now.
// Services use it to drop what the channel owned (breakpoints, stream
// subscriptions).
func (c *Channel) OnClose(f func()) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		f()
		return
	}
	c.onClose = append(c.onClose, f)
	c.mu.Unlock()
}

// Close closes the channel. A non-nil reason that is not the peer's own
// disconnect is sent to the peer as an end-of-stream error report
// (with the reason's TCF code if it has one).
func (c *Channel) Close(reason error) {
	c.closeWith(reason, false)
}

func (c *Channel) closeWith(reason error, dropQueue bool) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	c.closing = true
	c.reason = reason
	if c.behindTimer != nil {
		c.behindTimer.Stop() // the closing writer sends what is left
	}
	if dropQueue {
		c.refund(len(c.out))
		c.out = c.out[:0]
	}
	if reason != nil && !isPeerGone(reason) {
		var b Builder
		n := len(c.out)
		b.buf = append(c.out, esc, escEOS)
		b.Error(Report(reason, c.srv.Now()))
		b.End()
		c.out = b.buf
		c.charge(len(c.out)-n, true)
	}
	c.mu.Unlock()
	c.cancel()
	var cr *closeReason
	if errors.As(reason, &cr) && cr.code == CodeChannelClosed && cr.err == nil {
		c.log.Info("closing channel", "reason", reason) // shutdown: nothing wrong
	} else if reason != nil && !isPeerGone(reason) {
		c.log.Warn("closing channel", "reason", reason)
	} else {
		c.log.Debug("channel closed", "reason", reason)
	}
	// Bound the final flush, and stop the reader.
	_ = c.conn.SetWriteDeadline(time.Now().Add(closeFlushTimeout))
	_ = c.conn.SetReadDeadline(time.Now())
	c.signal()
}

func (c *Channel) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// inlineFlushLimit is how much reply data the reader goroutine lets pile
// up (while more input is buffered) before it wakes the writer anyway.
const inlineFlushLimit = 16 << 10

// enqueue appends an encoded message to the outgoing queue and wakes the
// writer. It returns false when the channel is closing. A queue overflow
// closes the channel.
func (c *Channel) enqueue(msg []byte) bool { return c.enqueueMsg(msg, true) }

// enqueueMsg is enqueue; wake=false is for replies produced on the reader
// goroutine, which flushes them itself when its input is drained (saving
// a goroutine hop per round trip).
func (c *Channel) enqueueMsg(msg []byte, wake bool) bool {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return false
	}
	if len(c.out)+len(msg) > c.srv.cfg.MaxQueueBytes {
		c.mu.Unlock()
		c.closeWith(&closeReason{code: CodeBufferOverflow,
			msg: fmt.Sprintf("peer does not read: outgoing queue over %d bytes", c.srv.cfg.MaxQueueBytes)}, true)
		return false
	}
	if !c.charge(len(msg), false) {
		queued := len(c.out)
		c.mu.Unlock()
		c.closeWith(&closeReason{code: CodeBufferOverflow,
			msg: fmt.Sprintf("agent-wide output queues full (%d bytes; this channel's: %d)", c.srv.outBudget.Limit(), queued)}, true)
		return false
	}
	c.out = append(c.out, msg...)
	big := len(c.out) > inlineFlushLimit
	c.mu.Unlock()
	if wake || big {
		c.signal()
	}
	return true
}

// enqueueOwned is enqueueMsg for a large message whose buffer the caller
// gives up: when the queue is empty the buffer becomes the queue, saving a
// copy of (say) a 1 MiB Memory.get reply.
func (c *Channel) enqueueOwned(msg []byte, wake bool) bool {
	c.mu.Lock()
	if c.closing || len(c.out) != 0 || len(msg) > c.srv.cfg.MaxQueueBytes {
		c.mu.Unlock()
		ok := c.enqueueMsg(msg, wake) // copies msg
		recycle(msg)
		return ok
	}
	if !c.charge(len(msg), false) {
		c.mu.Unlock()
		recycle(msg)
		c.closeWith(&closeReason{code: CodeBufferOverflow,
			msg: fmt.Sprintf("agent-wide output queues full (%d bytes)", c.srv.outBudget.Limit())}, true)
		return false
	}
	if c.spare == nil {
		c.spare = c.out
	}
	c.out = msg
	big := len(c.out) > inlineFlushLimit
	c.mu.Unlock()
	if wake || big {
		c.signal()
	}
	return true
}

// kickWriter wakes the writer if replies are waiting. The reader calls it
// before running a handler that is not known to be quick (see quickCall).
func (c *Channel) kickWriter() {
	c.mu.Lock()
	pending := len(c.out) > 0
	c.mu.Unlock()
	if pending {
		c.signal()
	}
}

// flushOnce writes what is queued unless another goroutine is writing.
// Writes are serialized by the writing flag so that messages keep their
// queue order whichever goroutine writes them.
func (c *Channel) flushOnce() error {
	c.mu.Lock()
	if c.writing || len(c.out) == 0 {
		c.mu.Unlock()
		return nil
	}
	c.writing = true
	buf := c.out
	c.out, c.spare = c.spare[:0], nil
	c.mu.Unlock()

	n, err := c.rw.Write(buf)

	c.mu.Lock()
	c.writing = false
	c.writeEnded.Broadcast()
	if err != nil {
		n = len(buf) // the channel closes: nothing of buf is kept
	}
	c.refund(n)
	if err == nil {
		c.wrote()
	}
	if cap(buf) <= 1<<20 && c.spare == nil {
		c.spare = buf[:0]
	} else {
		recycle(buf)
	}
	more := len(c.out) > 0 || c.closing
	c.mu.Unlock()
	if more {
		c.signal()
	}
	return err
}

// behindDelay bounds how long an event queued behind waits for another
// write to carry it.
const behindDelay = time.Millisecond

// enqueueBehind queues msg without writing it or waking the writer: the next
// write carries it, or the writer after behindDelay.
func (c *Channel) enqueueBehind(msg []byte) {
	if !c.enqueueMsg(msg, false) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.behind || c.closing {
		return
	}
	c.behind = true
	if c.behindTimer == nil {
		c.behindTimer = time.AfterFunc(behindDelay, c.sendBehind)
	} else {
		c.behindTimer.Reset(behindDelay)
	}
}

// sendBehind is the timer's: nothing else wrote what enqueueBehind queued.
func (c *Channel) sendBehind() {
	c.mu.Lock()
	c.behind = false
	c.mu.Unlock()
	c.signal()
}

// wrote notes (c.mu held) that the queue was written out: nothing waits
// behind any more.
func (c *Channel) wrote() {
	if c.behind && len(c.out) == 0 {
		c.behind = false
		c.behindTimer.Stop()
	}
}

// sendNow writes what is queued from the calling goroutine, never blocking:
// one non-blocking write, and what the socket does not take stays queued for
// the writer goroutine. An event reported on a thread that must not wait (a
// live target's tracer thread) so reaches the peer without waking another
// goroutine first.
func (c *Channel) sendNow() {
	if c.sock == nil {
		c.signal()
		return
	}
	c.mu.Lock()
	if c.writing || c.closing || len(c.out) == 0 {
		// A goroutine that is writing sends the rest when it is done; a
		// closing channel's writer sends what is left.
		c.mu.Unlock()
		c.signal()
		return
	}
	c.writing = true
	buf := c.out
	c.out, c.spare = c.spare[:0], nil
	c.mu.Unlock()

	// A full socket or an error: what is left goes to the writer, which
	// waits for room or meets the error.
	n, _ := c.sock.TryWrite(buf)

	c.mu.Lock()
	c.writing = false
	c.writeEnded.Broadcast()
	c.refund(n)
	if n < len(buf) {
		c.out = append(append([]byte(nil), buf[n:]...), c.out...)
	} else if cap(buf) <= 1<<20 && c.spare == nil {
		c.spare = buf[:0]
	}
	c.wrote()
	more := len(c.out) > 0 || c.closing
	c.mu.Unlock()
	if more {
		c.signal()
	}
}

func (c *Channel) writeLoop() {
	defer c.srv.wg.Done()
	defer close(c.writeDone)
	for {
		c.mu.Lock()
		for c.writing || (len(c.out) == 0 && !c.closing) {
			c.mu.Unlock()
			<-c.wake
			c.mu.Lock()
		}
		if len(c.out) == 0 { // closing, and everything was written
			c.mu.Unlock()
			break
		}
		c.mu.Unlock()
		if err := c.flushOnce(); err != nil {
			c.closeWith(&closeReason{code: CodeChannelClosed, msg: "write failed", err: err}, true)
			c.mu.Lock()
			c.refund(len(c.out))
			c.out = nil
			c.mu.Unlock()
			break
		}
	}
	c.conn.Close()
}

func (c *Channel) readLoop() {
	defer c.srv.wg.Done()
	defer c.finish()
	for {
		m, err := c.rd.ReadMessage()
		if err != nil {
			var me *MessageError
			if errors.As(err, &me) {
				// The frame was intact, so the stream is still in sync. A
				// command whose header was readable gets an error reply
				// and the channel goes on; anything else is a peer that
				// does not speak TCF.
				if m != nil && m.Kind == 'C' && m.Token != nil {
					c.badCommand(m, Errorf(CodeProtocol, "malformed arguments: %s", me.Reason))
					if !c.flushIfDrained() {
						return
					}
					continue
				}
				c.Close(err)
				return
			}
			c.mu.Lock()
			closing := c.closing
			c.mu.Unlock()
			if closing {
				return // our own Close stopped the reader
			}
			var ne net.Error
			if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
				return
			}
			c.Close(err)
			return
		}
		c.dispatch(m)
		if !c.flushIfDrained() {
			return
		}
	}
}

// replyChunk bounds the replies the reader holds back while more input is
// buffered. Holding them makes one write of a burst's replies, but a client
// that takes replies as they come (one that polls its socket, on the other
// CPU) then waits for the last command's before it can work on the first's:
// a stack round's 114 symbol and line lookups are 14 KB of replies. In
// pieces of about this size the client decodes the first while the agent
// works on the rest; a client that sleeps between reads finds them together
// all the same.
const replyChunk = 4 << 10

// queuedBytes is the length of the outgoing queue.
func (c *Channel) queuedBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.out)
}

// flushIfDrained sends queued replies from the reader goroutine once no
// more input is buffered, or once they are replyChunk or more. It returns
// false if the write failed.
func (c *Channel) flushIfDrained() bool {
	if c.rd.Buffered() {
		if c.queuedBytes() < replyChunk {
			// More input: if it is only the start of a message, the reader
			// sends what is queued before it waits for the rest (flushBeforeWait).
			return true
		}
		c.waitWrite()
	}
	if err := c.flushOnce(); err != nil {
		c.closeWith(&closeReason{code: CodeChannelClosed, msg: "write failed", err: err}, true)
		return false
	}
	if c.sock != nil {
		c.sock.SpinOnce() // the next command is what the reader waits for now
	}
	return true
}

// waitWrite waits until no other goroutine is writing. The reader calls it
// with a chunk of replies queued and more input buffered: were it to go on
// while the writer goroutine's write is under way (on a loaded machine the
// writer's thread may wait a while for a CPU), the replies would pile up
// and the writer would send the rest of the burst in one write. A write
// that does not end (a peer that does not read) ends at the latest when
// the channel closes (closeWith bounds it by a deadline).
func (c *Channel) waitWrite() {
	c.mu.Lock()
	for c.writing {
		c.writeEnded.Wait()
	}
	c.mu.Unlock()
}

// finish runs on the reader goroutine after the last handler returned.
func (c *Channel) finish() {
	c.Close(nil)
	<-c.writeDone
	c.srv.removeChannel(c)
	inPeak := c.rd.Peak()
	c.rd.Release()
	c.mu.Lock()
	hooks := c.onClose
	c.onClose = nil
	c.closed = true
	if c.helloTimer != nil {
		c.helloTimer.Stop()
	}
	c.refund(c.outCharged)
	c.out, c.spare = nil, nil
	outPeak := c.outPeak
	c.mu.Unlock()
	if inPeak+outPeak >= bigChannel {
		c.srv.memBack.schedule()
	}
	for _, h := range hooks {
		c.runHook(h)
	}
	close(c.done)
}

func (c *Channel) runHook(h func()) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("channel close hook panicked", "panic", p)
		}
	}()
	h()
}

func (c *Channel) sendHello() {
	var b Builder
	b.pooled().Event("Locator", "Hello").Data(c.srv.ServiceNames()).End()
	c.enqueue(b.buf)
	b.release()
}

func (c *Channel) dispatch(m *Message) {
	switch m.Kind {
	case 'C':
		c.command(m)
	case 'E':
		if string(m.Service) == "Locator" && string(m.Name) == "Hello" {
			c.peerHelloEvent(m)
			return
		}
		c.log.Debug("ignoring event from peer", "service", string(m.Service), "event", string(m.Name))
	default:
		// The agent sends no commands, so results, progress and flow
		// control messages from the peer have nothing to match.
		c.log.Debug("ignoring message from peer", "kind", string(m.Kind), "token", string(m.Token))
	}
}

func (c *Channel) peerHelloEvent(m *Message) {
	a := NewArgs(m.Fields)
	names := a.Strings()
	if err := a.End(); err != nil {
		c.log.Warn("malformed Hello from peer", "err", err)
	}
	zc := !c.srv.cfg.NoZeroCopy && slices.Contains(names, "ZeroCopy")
	c.mu.Lock()
	first := !c.peerHello
	c.peerHello = true
	c.peerServices = names
	c.zeroCopy = zc
	if c.helloTimer != nil {
		c.helloTimer.Stop()
	}
	c.mu.Unlock()
	if first {
		// Until its Hello a peer may send small messages only.
		c.rd.SetMaxMessage(c.srv.cfg.MaxMessageSize)
	}
	c.log.Debug("peer hello", "services", names)
}

// lookup finds a command; nil means the answer is N (unknown service or
// command, or the peer has not said Hello yet).
func (c *Channel) lookup(m *Message) (cmd *command, svc *Service, zeroCopy bool) {
	c.mu.Lock()
	hello, zc := c.peerHello, c.zeroCopy
	c.mu.Unlock()
	if !hello {
		return nil, nil, zc
	}
	svc = c.srv.lookup(m.Service)
	if svc == nil {
		return nil, nil, zc
	}
	return svc.handler(m.Name), svc, zc
}

func (c *Channel) notRecognized(token []byte) {
	var b Builder
	b.pooled().Result('N', token).End()
	c.enqueueMsg(b.buf, false)
	b.release()
}

// badCommand answers a command whose arguments could not be split: N if
// the command is unknown anyway, else an error-only reply.
func (c *Channel) badCommand(m *Message, err error) {
	if cmd, _, _ := c.lookup(m); cmd == nil {
		c.notRecognized(m.Token)
		return
	}
	c.log.Debug("malformed command", "service", string(m.Service), "command", string(m.Name), "err", err)
	var b Builder
	b.pooled().Result('R', m.Token).Error(Report(err, c.srv.Now())).End()
	c.enqueueMsg(b.buf, false)
	b.release()
}

func (c *Channel) command(m *Message) {
	cmd, svc, zc := c.lookup(m)
	if cmd == nil {
		// Unknown service or command, or a command before the peer's
		// Hello: exactly N, which clients read as "not recognized".
		c.notRecognized(m.Token)
		return
	}
	if err := c.srv.cfg.Refused.Refuses(svc.name, cmd.name, m.Fields); err != nil {
		c.refusedReply(m, err)
		return
	}
	call := c.freeCall
	if call != nil {
		c.freeCall = nil
		call.state.Store(callPending)
		call.reply = Reply{}
	} else {
		call = &Call{ch: c}
	}
	call.args = Args{fields: m.Fields, strs: &c.strs}
	call.service, call.command = svc.name, cmd.name
	call.token = append(call.tokenBuf[:0], m.Token...)
	call.reply.call = call
	call.reply.b.ZeroCopy = zc
	quick := cmd.quick.Load()
	if !quick {
		c.kickWriter()
	}
	// Time the handler unless it is known to be quick; a quick one still
	// every timeQuickEvery calls, so that one that turned slow is found.
	var start time.Time
	timed := !quick || cmd.calls.Add(1)%timeQuickEvery == 0
	if timed {
		start = time.Now()
	}
	c.run(cmd.h, call)
	if timed {
		cmd.quick.Store(time.Since(start) < quickCall)
	}
	c.recycle(call)
}

// A handler is quick when its timed calls took under quickCall: replies
// already made may then wait for it, to go out with the burst's others in
// one write when the reader's input runs dry. Before any other handler the
// reader wakes the writer for them (kickWriter), so that they never wait
// long for a slow one. Waking the writer before every command (before)
// cost a thread wake-up per burst that found nothing left to write: traced,
// a 57-frame stack round woke the writer's thread in most of its four waves
// (~4 futex calls and ~8 poller calls per round in the agent), and a burst
// of 64 pipelined commands went out in several writes.
const (
	quickCall      = 20 * time.Microsecond
	timeQuickEvery = 64
)

// recycle keeps call for the channel's next command when nothing can use it
// any more: answered before its handler returned, never deferred. A stack
// round is ~230 commands; a Call each was a fifth of the agent's
// allocations in it. Handlers must not keep a Call they did not Defer.
func (c *Channel) recycle(call *Call) {
	if call.deferred.Load() || call.state.Load() != callReplied {
		return
	}
	call.args = Args{}
	c.freeCall = call
}

func (c *Channel) run(h Handler, call *Call) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("command handler panicked", "service", call.service, "command", call.command, "panic", p)
			call.forceError(fmt.Errorf("internal error in %s.%s: %v", call.service, call.command, p))
		}
		call.args.fields = nil // they alias the reader's buffer
	}()
	call.inHandler.Store(true)
	h(call)
	call.inHandler.Store(false)
	if !call.finished() && !call.isDeferred() {
		c.log.Error("command handler returned without replying", "service", call.service, "command", call.command)
		call.forceError(fmt.Errorf("internal error: %s.%s did not reply", call.service, call.command))
	}
}
