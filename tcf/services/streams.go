package services

import (
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/sondedbg/sonde/tcf"
)

// Streams carry a launched program's standard streams. Output is buffered from
// the first byte, so nothing is lost before a client connects; a buffer that
// overflows drops its oldest bytes and reports them as lost.

// maxStreamBuffer bounds one output stream's buffer.
const maxStreamBuffer = 16 << 20

// maxStreamRead bounds one Streams.read reply.
const maxStreamRead = 1 << 20

type stream struct {
	id      string
	typ     string // the service that created it: "Processes" or "ProcessesV1"
	context string // the process it belongs to

	mu      sync.Mutex
	buf     []byte
	lost    uint64
	eos     bool
	waiters []func()
	w       io.WriteCloser // stdin streams
}

// streamTable owns the agent's streams and the channels' subscriptions to
// them: Processes, Terminals and DPrintf create streams in it (create), the
// Streams service reads and ends them.
type streamTable struct {
	srv *tcf.Server // for the created and disposed events

	mu      sync.Mutex
	next    int
	streams map[string]*stream // nil until the Streams service is offered
	subs    map[*tcf.Channel]map[string]bool
}

// streamsSvc is the Streams service's commands over the stream table.
type streamsSvc struct {
	streams *streamTable
}

// RegisterStreams adds the Streams service.
func (a *Agent) RegisterStreams() {
	ss := &streamsSvc{streams: &a.streams}
	st := &a.streams
	st.mu.Lock()
	st.srv = a.srv
	st.streams = map[string]*stream{}
	st.subs = map[*tcf.Channel]map[string]bool{}
	st.mu.Unlock()
	svc := a.srv.Service("Streams")
	svc.Command("subscribe", func(c *tcf.Call) { ss.subscribe(c, true) })
	svc.Command("unsubscribe", func(c *tcf.Call) { ss.subscribe(c, false) })
	svc.Command("connect", ss.connect)
	svc.Command("disconnect", ss.disconnect)
	svc.Command("read", ss.read)
	svc.Command("write", ss.write)
	svc.Command("eos", ss.eos)
}

// subscribe adds (on) or removes the channel's subscription to a stream type;
// a closed channel's go with it.
func (ss *streamsSvc) subscribe(c *tcf.Call, on bool) {
	st := ss.streams
	args := c.Args()
	typ := args.String()
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	ch := c.Channel()
	st.mu.Lock()
	m, ok := st.subs[ch]
	if !ok {
		m = map[string]bool{}
		st.subs[ch] = m
		ch.OnClose(func() { st.mu.Lock(); delete(st.subs, ch); st.mu.Unlock() })
	}
	if on {
		m[typ] = true
	} else {
		delete(m, typ)
	}
	st.mu.Unlock()
	c.ReplyError(nil)
}

func (ss *streamsSvc) connect(c *tcf.Call) {
	_, err := ss.streams.arg(c)
	c.ReplyError(err)
}

func (ss *streamsSvc) disconnect(c *tcf.Call) {
	s, err := ss.streams.arg(c)
	if err == nil {
		ss.streams.dispose(s)
	}
	c.ReplyError(err)
}

func (ss *streamsSvc) read(c *tcf.Call) {
	args := c.Args()
	id := args.String()
	max := args.Int()
	if err := args.End(); err != nil {
		c.Reply().Null().Error(err).Int64(0).Bool(false).Send()
		return
	}
	s := ss.streams.lookup(id)
	if s == nil {
		c.Reply().Null().Error(tcf.Errorf(tcf.CodeInvalidContext, "no stream %q", id)).Int64(0).Bool(false).Send()
		return
	}
	if max <= 0 || max > maxStreamRead {
		max = maxStreamRead
	}
	c.Defer()
	s.read(max, func(data []byte, lost uint64, eos bool) {
		c.Reply().Binary(data).Error(nil).Uint64(lost).Bool(eos).Send()
		if eos {
			// Everything was read: the stream is done with.
			ss.streams.dispose(s)
		}
	})
}

func (ss *streamsSvc) write(c *tcf.Call) {
	args := c.Args()
	id := args.String()
	size := args.Int()
	data := args.Binary()
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	s := ss.streams.lookup(id)
	if s == nil || s.w == nil {
		c.ReplyError(tcf.Errorf(tcf.CodeInvalidContext, "no writable stream %q", id))
		return
	}
	if size < len(data) {
		data = data[:size]
	}
	_, err := s.w.Write(data)
	c.ReplyError(err)
}

func (ss *streamsSvc) eos(c *tcf.Call) {
	s, err := ss.streams.arg(c)
	if err == nil && s.w != nil {
		err = s.w.Close()
		ss.streams.dispose(s)
	}
	c.ReplyError(err)
}

// streamExpiry is how long the streams of a process that exited are kept for
// a client to read (then they go, so that output nobody reads does not pile
// up for ever).
var streamExpiry = 10 * time.Minute

// expireStreams disposes of an exited process's streams after streamExpiry
// (those a client read to the end are gone already).
func (st *streamTable) expire(lp *launchedProcess) {
	if lp == nil {
		return
	}
	time.AfterFunc(streamExpiry, func() {
		for _, s := range []*stream{lp.stdin, lp.stdout, lp.stderr} {
			if s != nil {
				st.dispose(s)
			}
		}
	})
}

// dispose forgets a stream (its buffer goes with it) and tells the
// subscribers.
func (st *streamTable) dispose(s *stream) {
	st.mu.Lock()
	_, ok := st.streams[s.id]
	delete(st.streams, s.id)
	st.mu.Unlock()
	if !ok {
		return
	}
	if s.w != nil {
		s.w.Close()
	}
	st.srv.EmitTo(func(ch *tcf.Channel) bool { return st.subs[ch][s.typ] }, "Streams", "disposed", s.typ, s.id)
}

// lookup returns the stream of an ID, or nil.
func (st *streamTable) lookup(id string) *stream {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.streams[id]
}

// arg reads a command's one argument, a stream ID, and returns its stream.
func (st *streamTable) arg(c *tcf.Call) (*stream, error) {
	args := c.Args()
	id := args.String()
	if err := args.End(); err != nil {
		return nil, err
	}
	if s := st.lookup(id); s != nil {
		return s, nil
	}
	return nil, tcf.Errorf(tcf.CodeInvalidContext, "no stream %q", id)
}

// create registers a stream and announces it to the channels subscribed to
// its type.
func (st *streamTable) create(typ, context string) *stream {
	st.mu.Lock()
	if st.streams == nil {
		st.mu.Unlock()
		return nil // Streams not offered: nothing to announce or read
	}
	st.next++
	s := &stream{id: "VS" + strconv.Itoa(st.next), typ: typ, context: context}
	st.streams[s.id] = s
	st.mu.Unlock()
	st.srv.EmitTo(func(ch *tcf.Channel) bool { return st.subs[ch][typ] }, "Streams", "created", typ, s.id, context)
	return s
}

// pump copies r into s until EOF.
func pump(s *stream, r io.Reader) {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.append(buf[:n])
		}
		if err != nil {
			s.finish()
			return
		}
	}
}

func (s *stream) append(p []byte) {
	s.mu.Lock()
	s.buf = append(s.buf, p...)
	if over := len(s.buf) - maxStreamBuffer; over > 0 {
		s.lost += uint64(over)
		s.buf = append(s.buf[:0], s.buf[over:]...)
	}
	w := s.waiters
	s.waiters = nil
	s.mu.Unlock()
	for _, f := range w {
		f()
	}
}

func (s *stream) finish() {
	s.mu.Lock()
	s.eos = true
	w := s.waiters
	s.waiters = nil
	s.mu.Unlock()
	for _, f := range w {
		f()
	}
}

// read answers with up to max bytes as soon as there are any, or at end of
// stream (a long poll).
func (s *stream) read(max int, reply func(data []byte, lost uint64, eos bool)) {
	s.mu.Lock()
	if len(s.buf) == 0 && !s.eos {
		s.waiters = append(s.waiters, func() { s.read(max, reply) })
		s.mu.Unlock()
		return
	}
	n := len(s.buf)
	if n > max {
		n = max
	}
	data := append([]byte(nil), s.buf[:n]...)
	s.buf = append(s.buf[:0], s.buf[n:]...)
	lost := s.lost
	s.lost = 0
	eos := s.eos && len(s.buf) == 0
	s.mu.Unlock()
	reply(data, lost, eos)
}

// dropFinished forgets a finished stream nothing is left to read from,
// without telling the subscribers (DPrintf's stream of a closed channel).
func (st *streamTable) dropFinished(s *stream) {
	st.mu.Lock()
	_, ok := st.streams[s.id]
	if ok && s.eosRead() {
		delete(st.streams, s.id)
	}
	st.mu.Unlock()
}
