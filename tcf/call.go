package tcf

import (
	"context"
	"sync/atomic"
)

// Call is one command being executed: its arguments and its reply.
type Call struct {
	ch       *Channel
	service  string
	command  string
	token    []byte
	tokenBuf [24]byte
	args     Args
	reply    Reply
	state    atomic.Uint32 // callPending, callDeferred, callReplied
	// inHandler is set while the handler runs on the reader goroutine,
	// which then flushes the reply itself.
	inHandler atomic.Bool
	// deferred is set by Defer: the call may be used after its handler
	// returned, so the channel must not reuse it (see Channel.recycle).
	deferred atomic.Bool
}

const (
	callPending uint32 = iota
	callDeferred
	callReplied
)

// Channel is the channel the command came on (for per-channel state and
// OnClose hooks).
func (c *Call) Channel() *Channel { return c.ch }

// Context is cancelled when the channel closes (see Channel.Context).
func (c *Call) Context() context.Context { return c.ch.ctx }

// Service and Command name the command being run.
func (c *Call) Service() string { return c.service }
func (c *Call) Command() string { return c.command }

// Token is the command's token as the peer sent it.
func (c *Call) Token() string { return string(c.token) }

// Args is the argument decoder. Arguments must be decoded before the
// handler returns (they alias the channel's read buffer); decoded values
// are copies and can be kept.
func (c *Call) Args() *Args { return &c.args }

// Defer declares that the reply will be sent later (from any goroutine),
// after the handler returned — e.g. Streams.read waiting for data. The next
// command of the channel is dispatched meanwhile. A reply sent after the
// channel closed is dropped. Only a deferred Call may be kept after its
// handler returned (see Handler).
func (c *Call) Defer() {
	c.deferred.Store(true)
	c.state.CompareAndSwap(callPending, callDeferred)
}

func (c *Call) isDeferred() bool { return c.state.Load() == callDeferred }
func (c *Call) finished() bool   { return c.state.Load() == callReplied }

// Reply starts the result message. Fields are appended in the order the
// command's reply defines, e.g. for Memory.get (data, error, ranges):
//
//	c.Reply().Binary(data).Error(err).Data(ranges).Send()
//
// Call Reply once; the Reply must not be used after Send.
func (c *Call) Reply() *Reply {
	r := &c.reply
	if r.b.buf == nil {
		r.b.pooled().Result('R', c.token)
	}
	return r
}

// ReplyError sends the common error-only reply (an empty field for nil).
func (c *Call) ReplyError(err error) { c.Reply().Error(err).Send() }

// forceError answers a command whose handler failed to (panic or no reply).
func (c *Call) forceError(err error) {
	if !c.state.CompareAndSwap(callPending, callReplied) {
		if !c.state.CompareAndSwap(callDeferred, callReplied) {
			return
		}
	}
	var b Builder
	b.pooled().Result('R', c.token).Error(Report(err, c.ch.srv.Now())).End()
	c.ch.enqueueMsg(b.buf, !c.inHandler.Load())
	b.release()
	c.reply.b.release()
}

// Reply builds a command's result. Each method appends one field.
type Reply struct {
	call *Call
	b    Builder
}

// Error appends the error field: empty when err is nil, else the error
// report for err (see [Report] for how codes are chosen).
func (r *Reply) Error(err error) *Reply {
	r.b.Error(Report(err, r.call.ch.srv.Now()))
	return r
}

// Data appends a value encoded as JSON (integers exact, []byte as base64,
// json.RawMessage verbatim, nil as null).
func (r *Reply) Data(v any) *Reply { r.b.Data(v); return r }

// String appends a JSON string.
func (r *Reply) String(s string) *Reply { r.b.String(s); return r }

// Uint64 appends an exact unsigned integer.
func (r *Reply) Uint64(v uint64) *Reply { r.b.Uint64(v); return r }

// Int64 appends an exact signed integer.
func (r *Reply) Int64(v int64) *Reply { r.b.Int64(v); return r }

// Bool appends true or false.
func (r *Reply) Bool(v bool) *Reply { r.b.Bool(v); return r }

// Null appends the literal null.
func (r *Reply) Null() *Reply { r.b.Null(); return r }

// Empty appends an empty field (read as null by clients).
func (r *Reply) Empty() *Reply { r.b.Empty(); return r }

// Binary appends binary data: base64, or "(N)"+raw when both peers listed
// ZeroCopy. nil is null.
func (r *Reply) Binary(p []byte) *Reply { r.b.Binary(p); return r }

// RawJSON appends a JSON text verbatim (empty = null).
func (r *Reply) RawJSON(text []byte) *Reply { r.b.RawJSON(text); return r }

// Report appends an already built error report (nil = empty field).
func (r *Reply) Report(rep *ErrorReport) *Reply { r.b.Error(rep); return r }

// Send queues the reply. Only the first Send of a call counts. If a field
// could not be encoded, the peer gets an error-only reply instead (and the
// problem is logged): it is a bug in the service.
func (r *Reply) Send() { r.send(false) }

// SendBehind is Send for a reply nobody waits on at once: it is not written
// by itself but rides with the channel's next write (at most a millisecond
// later, as EmitBehind's events do). A resume's reply so reaches the client
// with the stop that follows it instead of waking it while the thread runs.
func (r *Reply) SendBehind() { r.send(true) }

func (r *Reply) send(behind bool) {
	c := r.call
	if !c.state.CompareAndSwap(callPending, callReplied) && !c.state.CompareAndSwap(callDeferred, callReplied) {
		c.ch.log.Error("second reply to a command dropped", "service", c.service, "command", c.command)
		return
	}
	r.b.End()
	msg, err := r.b.Bytes()
	if err != nil {
		c.ch.log.Error("reply not encodable", "service", c.service, "command", c.command, "err", err)
		r.b.buf, r.b.err = r.b.buf[:0], nil
		r.b.Result('R', c.token).Error(Report(err, c.ch.srv.Now())).End()
		msg = r.b.buf
	}
	switch {
	case behind:
		c.ch.enqueueBehind(msg)
	case len(msg) > maxPooledBuf:
		// Too big for the pool anyway: hand the buffer to the queue.
		c.ch.enqueueOwned(msg, !c.inHandler.Load())
		r.b.pool, r.b.buf = nil, nil
		return
	default:
		c.ch.enqueueMsg(msg, !c.inHandler.Load())
	}
	r.b.release()
}
