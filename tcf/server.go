package tcf

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxQueueBytes bounds the bytes waiting to be written to one
// channel. A client that stops reading is disconnected once its queue would
// exceed this, so it never holds back the others or grows memory without
// bound.
const DefaultMaxQueueBytes = 64 << 20

// Config tunes a Server. The zero value is usable.
type Config struct {
	Logger         *slog.Logger     // default: slog.Default()
	MaxMessageSize int              // bound on one incoming message; default DefaultMaxMessageSize
	MaxQueueBytes  int              // bound on one channel's outgoing queue; default DefaultMaxQueueBytes
	Now            func() time.Time // clock for error-report times; default time.Now
	AgentID        string           // Locator agent ID; default a random UUID made once per Server
	Name           string           // peer Name in getPeers; default "sonde"
	NoZeroCopy     bool             // do not list "ZeroCopy" in Hello
	MaxChannels    int              // open channels at most; default DefaultMaxChannels
	// ReadSpin is how long a channel's reader keeps polling its socket after
	// it ran dry before it sleeps (see RawSocket.Spin); 0 means
	// DefaultReadSpin, a negative value never.
	ReadSpin time.Duration

	// Admit decides whether Serve serves a connection it accepted, and who
	// the peer is (see AccessPolicy); it runs on a goroutine of its own
	// under a deadline of HelloTimeout, and a refused connection is closed
	// with the reason in the log, before anything is read from it. Nil
	// serves every connection (ServeConn never calls it).
	Admit func(net.Conn) (Peer, error)
	// HelloTimeout closes a channel whose peer has not sent its Locator
	// Hello this long after the connection was accepted; 0 means
	// DefaultHelloTimeout, a negative value never.
	HelloTimeout time.Duration
	// MaxChannelsPerPeer bounds the channels one peer (Peer.Key) holds;
	// 0 means half of MaxChannels.
	MaxChannelsPerPeer int
	// MaxPreHelloMessage bounds a message before the peer's Hello; 0 means
	// DefaultMaxPreHelloMessage.
	MaxPreHelloMessage int
	// MaxBufferedInput and MaxQueuedOutput bound the input all channels
	// buffer and the output queued for all of them; 0 means
	// DefaultMaxBufferedInput and DefaultMaxQueuedOutput, negative none.
	MaxBufferedInput int64
	MaxQueuedOutput  int64
	// Refused lists commands the server answers with an error instead of
	// running them (see ReadOnlyCommands).
	Refused *CommandFilter
}

// DefaultHelloTimeout: TCF clients send their Hello as soon as they are
// connected; one that says nothing for this long is not a TCF client, or
// is one holding a slot for nothing.
const DefaultHelloTimeout = 5 * time.Second

// DefaultMaxPreHelloMessage: a Hello lists service names; nothing a peer
// legitimately sends before it is larger.
const DefaultMaxPreHelloMessage = 64 << 10

// DefaultReadSpin: a client in a request/reply exchange (a debugger
// stepping, a script, a benchmark) sends its next command within tens of
// microseconds of a reply; a reader still awake then takes it without the
// wake-up of a sleeping thread, which costs tens of microseconds on a VM.
// Echo round trips with a client in another process went from 15-18k to
// 24-27k/s on the 2-vCPU VM of bench/tcf/BENCHMARKS.md. The cost is at most
// this much CPU per burst of input.
const DefaultReadSpin = 100 * time.Microsecond

// DefaultMaxChannels bounds the number of open channels, so a peer that
// opens connections in a loop cannot exhaust the agent.
const DefaultMaxChannels = 256

// A Handler runs one command. It is called on the channel's reader goroutine,
// in arrival order; it must reply exactly once through c.Reply() — either
// before returning, or later from any goroutine after calling c.Defer().
// A Call that was not deferred belongs to the channel once its handler
// returned (the channel reuses it for its next command): keep its Channel
// or decoded arguments, never the Call.
// Handlers of different channels run concurrently: services guard their
// state with their own locks.
type Handler func(c *Call)

// Service is a named set of command handlers on a Server. Services appear
// in the Hello of channels accepted after they were registered.
type Service struct {
	name     string
	server   *Server
	mu       sync.RWMutex
	commands map[string]*command
}

type command struct {
	name string // the registered name, so dispatch does not allocate one
	h    Handler
	// quick is set while the calls of this handler that were timed took
	// under quickCall each (see Channel.command); calls counts them.
	quick atomic.Bool
	calls atomic.Uint32
}

// Name is the service's TCF name.
func (s *Service) Name() string { return s.name }

// Command registers (or replaces) the handler of a command.
func (s *Service) Command(name string, h Handler) {
	s.mu.Lock()
	s.commands[name] = &command{name: name, h: h}
	s.mu.Unlock()
}

// handler returns the command named name (nil if there is none).
func (s *Service) handler(name []byte) *command {
	s.mu.RLock()
	c := s.commands[string(name)]
	s.mu.RUnlock()
	return c
}

// Server is a TCF agent endpoint: it accepts channels, answers commands
// through registered services and broadcasts events.
type Server struct {
	cfg Config
	log *slog.Logger

	services atomic.Pointer[map[string]*Service] // copy on write
	order    []string                            // registration order, guarded by regMu
	regMu    sync.Mutex

	mu         sync.Mutex // guards channels, listeners, hooks, closed; held while broadcasting
	channels   []*Channel
	listeners  []net.Listener
	openHooks  []func(*Channel)
	shutHooks  []func(context.Context)
	shutdown   bool
	nextID     uint64
	wg         sync.WaitGroup // channel goroutines and accept loops
	shutOnce   sync.Once
	shutDoneCh chan struct{}

	perPeer    map[string]int // open channels by Peer.Key (under mu)
	handshakes map[string]int // TLS handshakes in progress by remote address (under mu)
	admitting  atomic.Int32   // connections in Config.Admit
	evicting   atomic.Bool    // evictLargestQueue is running
	inBudget   *Budget        // input buffered by all channels
	outBudget  *Budget        // output queued for all channels
	memBack    memReturner
}

// evictLargestQueue closes the channel holding the most of the output
// budget, when the budget is spent: a peer that stops reading while
// events pile up for it must not make the agent close the others.
func (s *Server) evictLargestQueue() {
	if !s.evicting.CompareAndSwap(false, true) {
		return
	}
	defer s.evicting.Store(false)
	b := s.outBudget
	var hog *Channel
	most := 0
	s.mu.Lock()
	for _, ch := range s.channels {
		ch.mu.Lock()
		if n := ch.outCharged; n > most && !ch.closing {
			hog, most = ch, n
		}
		ch.mu.Unlock()
	}
	s.mu.Unlock()
	// Only a channel holding a big share is a hog (the one that found the
	// budget spent may have been answered and drained meanwhile).
	if hog != nil && int64(most) > b.Limit()/4 {
		hog.closeWith(&closeReason{code: CodeBufferOverflow,
			msg: fmt.Sprintf("agent-wide output queues full (%d bytes): this channel's peer does not read (%d bytes queued, the most)",
				b.Limit(), most)}, true)
	}
}

// InputBudget and OutputBudget are the agent-wide bounds on buffered input
// and queued output, with what is charged to them now.
func (s *Server) InputBudget() *Budget  { return s.inBudget }
func (s *Server) OutputBudget() *Budget { return s.outBudget }

// NewServer returns a server with the Locator service registered.
func NewServer(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxMessageSize <= 0 {
		cfg.MaxMessageSize = DefaultMaxMessageSize
	}
	if cfg.MaxQueueBytes <= 0 {
		cfg.MaxQueueBytes = DefaultMaxQueueBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AgentID == "" {
		cfg.AgentID = newUUID()
	}
	if cfg.Name == "" {
		cfg.Name = "sonde"
	}
	if cfg.MaxChannels <= 0 {
		cfg.MaxChannels = DefaultMaxChannels
	}
	if cfg.ReadSpin == 0 {
		cfg.ReadSpin = DefaultReadSpin
	}
	if cfg.HelloTimeout == 0 {
		cfg.HelloTimeout = DefaultHelloTimeout
	}
	if cfg.MaxChannelsPerPeer <= 0 {
		cfg.MaxChannelsPerPeer = max(cfg.MaxChannels/2, 1)
	}
	if cfg.MaxPreHelloMessage <= 0 {
		cfg.MaxPreHelloMessage = DefaultMaxPreHelloMessage
	}
	if cfg.MaxBufferedInput == 0 {
		cfg.MaxBufferedInput = DefaultMaxBufferedInput
	}
	if cfg.MaxQueuedOutput == 0 {
		cfg.MaxQueuedOutput = DefaultMaxQueuedOutput
	}
	s := &Server{cfg: cfg, log: cfg.Logger, shutDoneCh: make(chan struct{}),
		inBudget: NewBudget(cfg.MaxBufferedInput), outBudget: NewBudget(cfg.MaxQueuedOutput),
		perPeer: map[string]int{}, handshakes: map[string]int{}}
	empty := map[string]*Service{}
	s.services.Store(&empty)
	registerLocator(s)
	return s
}

// newUUID makes a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// AgentID is the Locator agent ID, stable for the server's lifetime.
func (s *Server) AgentID() string { return s.cfg.AgentID }

// Logger is the server's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// Now is the server's clock (error-report times).
func (s *Server) Now() time.Time { return s.cfg.Now() }

// Service returns the service called name, registering it if needed.
func (s *Server) Service(name string) *Service {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	old := *s.services.Load()
	if svc, ok := old[name]; ok {
		return svc
	}
	svc := &Service{name: name, server: s, commands: map[string]*command{}}
	m := make(map[string]*Service, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[name] = svc
	s.order = append(s.order, name)
	s.services.Store(&m)
	return svc
}

func (s *Server) lookup(name []byte) *Service {
	return (*s.services.Load())[string(name)]
}

// ServiceNames lists the names a Hello advertises: "ZeroCopy" (unless
// disabled), then the services in registration order.
func (s *Server) ServiceNames() []string {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	names := make([]string, 0, len(s.order)+1)
	if !s.cfg.NoZeroCopy {
		names = append(names, "ZeroCopy")
	}
	return append(names, s.order...)
}

// OnChannelOpen registers f to run for every new channel, right after the
// agent's Hello was queued and before any command of it is read.
func (s *Server) OnChannelOpen(f func(*Channel)) {
	s.mu.Lock()
	s.openHooks = append(s.openHooks, f)
	s.mu.Unlock()
}

// OnShutdown registers cleanup run by Shutdown before channels are closed
// (e.g. detaching every target after removing every patch). Hooks run in
// reverse registration order.
func (s *Server) OnShutdown(f func(context.Context)) {
	s.mu.Lock()
	s.shutHooks = append(s.shutHooks, f)
	s.mu.Unlock()
}

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("tcf: server shut down")

// Serve accepts channels on l until Shutdown or an accept error.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners = append(s.listeners, l)
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	var delay time.Duration
	for {
		conn, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			down := s.shutdown
			s.mu.Unlock()
			if down {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "delay", delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		if s.cfg.Admit == nil {
			s.ServeConn(conn)
			continue
		}
		// Admission may take a while (a TLS handshake): never on the
		// accept loop, and never for more connections at once than the
		// server could serve.
		if int(s.admitting.Add(1)) > s.cfg.MaxChannels {
			s.admitting.Add(-1)
			s.log.Warn("refusing connection: too many connections being admitted",
				"peer", conn.RemoteAddr().String(), "max", s.cfg.MaxChannels)
			conn.Close()
			continue
		}
		host := handshakeHost(conn)
		if host != "" && !s.startHandshake(host) {
			s.admitting.Add(-1)
			s.log.Warn("refusing connection: too many TLS handshakes from its address",
				"peer", conn.RemoteAddr().String(), "max", MaxHandshakesPerAddr)
			conn.Close()
			continue
		}
		s.wg.Add(1)
		go s.admit(conn, host)
	}
}

// MaxHandshakesPerAddr bounds the TLS handshakes in progress from one
// address: a peer that opens connections and never completes them holds
// admission slots until Config.HelloTimeout, and must not hold them all.
const MaxHandshakesPerAddr = 16

// handshakeHost is the remote address of a connection whose admission
// waits for the peer (a TLS handshake), "" for others.
func handshakeHost(conn net.Conn) string {
	if _, ok := conn.(*tls.Conn); !ok {
		return ""
	}
	host, _, err := net.SplitHostPort(conn.RemoteAddr().String())
	if err != nil {
		return conn.RemoteAddr().String()
	}
	return host
}

// startHandshake counts a handshake from host; false if it has too many.
func (s *Server) startHandshake(host string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handshakes[host] >= MaxHandshakesPerAddr {
		return false
	}
	s.handshakes[host]++
	return true
}

func (s *Server) endHandshake(host string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handshakes[host]--; s.handshakes[host] <= 0 {
		delete(s.handshakes, host)
	}
}

// admit runs Config.Admit on a new connection and serves it if admitted.
func (s *Server) admit(conn net.Conn, host string) {
	defer s.wg.Done()
	defer s.admitting.Add(-1)
	if host != "" {
		defer s.endHandshake(host)
	}
	if d := s.cfg.HelloTimeout; d > 0 {
		_ = conn.SetDeadline(time.Now().Add(d))
	}
	peer, err := s.cfg.Admit(conn)
	if err != nil {
		s.log.Warn("refusing connection", "peer", conn.RemoteAddr().String(), "reason", err)
		conn.Close()
		return
	}
	_ = conn.SetDeadline(time.Time{})
	s.serveConn(conn, peer)
}

// refuse tells a peer over a channel limit why it is dropped.
func (s *Server) refuse(conn net.Conn, peer Peer, why string) {
	s.log.Warn("refusing channel: "+why, "peer", peer.String(conn))
	var b Builder
	b.buf = append(b.buf, esc, escEOS)
	b.Error(Report(Errorf(CodeOther, "%s", why), s.Now())).End()
	_ = conn.SetWriteDeadline(time.Now().Add(closeFlushTimeout))
	go func() { // never block the accept loop on a peer
		defer s.wg.Done()
		conn.Write(b.buf)
		conn.Close()
	}()
}

// ServeConn runs a channel over an established connection (any byte
// stream), without Config.Admit. It returns the channel, or nil after
// Shutdown or when Config.MaxChannels channels are open.
func (s *Server) ServeConn(conn net.Conn) *Channel {
	return s.serveConn(conn, Peer{UID: -1})
}

// ServeConnAs is ServeConn for a peer already identified: its channels
// count against Config.MaxChannelsPerPeer.
func (s *Server) ServeConnAs(conn net.Conn, peer Peer) *Channel {
	return s.serveConn(conn, peer)
}

func (s *Server) serveConn(conn net.Conn, peer Peer) *Channel {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		conn.Close()
		return nil
	}
	if len(s.channels) >= s.cfg.MaxChannels {
		s.wg.Add(1)
		s.mu.Unlock()
		s.refuse(conn, peer, fmt.Sprintf("too many open channels (%d)", s.cfg.MaxChannels))
		return nil
	}
	if peer.Key != "" && s.perPeer[peer.Key] >= s.cfg.MaxChannelsPerPeer {
		s.wg.Add(1)
		s.mu.Unlock()
		s.refuse(conn, peer, fmt.Sprintf("too many open channels from %s (%d)", peer.Key, s.cfg.MaxChannelsPerPeer))
		return nil
	}
	if peer.Key != "" {
		s.perPeer[peer.Key]++
	}
	s.nextID++
	ch := newChannel(s, conn, s.nextID)
	ch.peer = peer
	if peer.Key != "" {
		ch.log = ch.log.With("peer_id", peer.Key)
	}
	// Hello is queued before the channel joins the broadcast list, so no
	// event can precede it.
	ch.sendHello()
	s.channels = append(s.channels, ch)
	hooks := slices.Clone(s.openHooks)
	s.wg.Add(2)
	s.mu.Unlock()

	for _, h := range hooks {
		h(ch)
	}
	ch.startHelloTimer(s.cfg.HelloTimeout)
	go ch.writeLoop()
	go ch.readLoop()
	return ch
}

func (s *Server) removeChannel(ch *Channel) {
	s.mu.Lock()
	if i := slices.Index(s.channels, ch); i >= 0 {
		s.channels = slices.Delete(s.channels, i, i+1)
		if k := ch.peer.Key; k != "" {
			if s.perPeer[k]--; s.perPeer[k] <= 0 {
				delete(s.perPeer, k)
			}
		}
	}
	s.mu.Unlock()
}

// Channels returns the open channels.
func (s *Server) Channels() []*Channel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.channels)
}

// Emit broadcasts an event to every open channel. Each argument is encoded
// with Builder.Data (integers exact, []byte as base64). Concurrent Emit calls
// reach every channel in the same order; callers emit in the order their
// state changed. The event is written from the calling goroutine when the
// socket takes it at once (the channel's writer writes what it does not).
func (s *Server) Emit(service, name string, args ...any) error {
	return s.EmitTo(nil, service, name, args...)
}

// EmitTo broadcasts an event to the open channels for which filter returns
// true (all channels when filter is nil). filter runs with the server's
// broadcast lock held and must not call back into the Server.
func (s *Server) EmitTo(filter func(*Channel) bool, service, name string, args ...any) error {
	return s.broadcast(filter, true, service, name, args)
}

// EmitBehind is Emit for an event that another usually follows at once (a
// breakpoint's status, then the stop it causes): it is queued, so that the
// next write to the channel carries both with one system call and the peer
// wakes once. If no write comes, the channel's writer sends it within
// behindDelay.
func (s *Server) EmitBehind(service, name string, args ...any) error {
	return s.broadcast(nil, false, service, name, args)
}

func (s *Server) broadcast(filter func(*Channel) bool, now bool, service, name string, args []any) error {
	var b Builder
	b.pooled().Event(service, name)
	for _, a := range args {
		b.Data(a)
	}
	b.End()
	msg, err := b.Bytes()
	if err != nil {
		b.release()
		return fmt.Errorf("tcf: event %s.%s: %w", service, name, err)
	}
	var to []*Channel
	s.mu.Lock()
	for _, ch := range s.channels {
		if filter != nil && !filter(ch) {
			continue
		}
		if now && ch.enqueueMsg(msg, false) {
			to = append(to, ch)
		} else if !now {
			ch.enqueueBehind(msg)
		}
	}
	s.mu.Unlock()
	b.release()
	for _, ch := range to {
		ch.sendNow()
	}
	return nil
}

// Shutdown stops accepting, runs the shutdown hooks, closes every channel
// (each peer gets an end-of-stream report) and waits for the channels'
// goroutines, or for ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutOnce.Do(func() {
		s.mu.Lock()
		s.shutdown = true
		ls := s.listeners
		hooks := s.shutHooks
		s.mu.Unlock()
		for _, l := range ls {
			l.Close()
		}
		for i := len(hooks) - 1; i >= 0; i-- {
			hooks[i](ctx)
		}
		for _, ch := range s.Channels() {
			ch.Close(&closeReason{code: CodeChannelClosed, msg: "agent shutting down"})
		}
		go func() {
			s.wg.Wait()
			close(s.shutDoneCh)
		}()
	})
	select {
	case <-s.shutDoneCh:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// closeReason is why the agent closes a channel; it is sent to the peer in
// the end-of-stream report.
type closeReason struct {
	code int
	msg  string
	err  error
}

func (r *closeReason) Error() string {
	if r.err != nil {
		return r.msg + ": " + r.err.Error()
	}
	return r.msg
}
func (r *closeReason) Unwrap() error { return r.err }
func (r *closeReason) TCFCode() int  { return r.code }

// isPeerGone reports errors that mean the peer went away (nothing to tell it).
func isPeerGone(err error) bool {
	var eos *EOSError
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.As(err, &eos)
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// pooled gives the builder a buffer from the pool; release returns it.
// Holding the pool's *[]byte avoids an allocation per message.
func (b *Builder) pooled() *Builder {
	b.pool = bufPool.Get().(*[]byte)
	b.buf, b.err = (*b.pool)[:0], nil
	return b
}

// maxPooledBuf is the largest buffer kept in the pool.
const maxPooledBuf = 64 << 10

func (b *Builder) release() {
	if b.pool != nil && cap(b.buf) <= maxPooledBuf {
		*b.pool = b.buf[:0]
		bufPool.Put(b.pool)
	}
	b.pool, b.buf = nil, nil
}

// largeBufs holds message buffers too large for bufPool (a Memory.get reply
// of a megabyte) once they were written, for the next large message: built
// afresh each time, such a reply was most of what the agent allocated and
// its garbage collector's work with it.
var largeBufs sync.Pool // of *[]byte

// maxLargeBuf bounds the buffers largeBufs keeps.
const maxLargeBuf = 16 << 20

// grow makes room for n more bytes, taking a large buffer from largeBufs
// when the message outgrows the small ones.
func (b *Builder) grow(n int) {
	if cap(b.buf)-len(b.buf) >= n {
		return
	}
	if need := len(b.buf) + n; need > maxPooledBuf && need <= maxLargeBuf {
		if p, _ := largeBufs.Get().(*[]byte); p != nil {
			if cap(*p) >= need {
				b.buf = append((*p)[:0], b.buf...)
				return
			}
			largeBufs.Put(p)
		}
	}
	b.buf = slices.Grow(b.buf, n)
}

// recycle offers a written message buffer to largeBufs.
func recycle(buf []byte) {
	if c := cap(buf); c > maxPooledBuf && c <= maxLargeBuf {
		buf = buf[:0]
		largeBufs.Put(&buf)
	}
}
