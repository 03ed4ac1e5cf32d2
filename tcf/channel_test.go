package tcf_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

func TestEventsReachEveryChannelInOrder(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	const clients, events = 4, 2000
	var wg sync.WaitGroup
	got := make([][]uint64, clients)
	for i := range clients {
		c := dial(t, addr, client.Options{})
		wg.Add(1)
		c.OnEvent("Test", "tick", func(e client.Event) {
			var n uint64
			var s string
			if err := e.Decode(&n, &s); err != nil {
				t.Errorf("client %d: %v", i, err)
			}
			got[i] = append(got[i], n)
			if len(got[i]) == events {
				wg.Done()
			}
		})
	}
	waitChannels(t, srv, clients)
	// Two emitters racing: every channel must still see the same order.
	var mu sync.Mutex
	var order []uint64
	var ew sync.WaitGroup
	for g := range 2 {
		ew.Add(1)
		go func() {
			defer ew.Done()
			for k := range events / 2 {
				n := uint64(g)<<62 | uint64(k)
				mu.Lock() // the emitter's own state change and its event, in order
				order = append(order, n)
				if err := srv.Emit("Test", "tick", n, "x"); err != nil {
					t.Error(err)
				}
				mu.Unlock()
			}
		}()
	}
	ew.Wait()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("events missing")
	}
	for i := range clients {
		if fmt.Sprint(got[i]) != fmt.Sprint(order) {
			t.Fatalf("client %d saw a different order", i)
		}
	}
}

func TestSlowClientDoesNotBlockOthers(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{MaxQueueBytes: 256 << 10})
	fast := dial(t, addr, client.Options{})
	var n atomic.Int64
	fast.OnEvent("Test", "blob", func(client.Event) { n.Add(1) })

	// The slow peer says Hello and then never reads.
	slow := dialRaw(t, addr)
	slow.write(msg("E", "Locator", "Hello", `[]`))
	waitChannels(t, srv, 2)

	payload := bytes.Repeat([]byte("x"), 16<<10)
	const events = 2000 // 2000 * ~22 KiB of base64: far beyond socket buffers and the queue
	deadline := time.Now().Add(20 * time.Second)
	for i := range events {
		if err := srv.Emit("Test", "blob", payload); err != nil {
			t.Fatal(err)
		}
		// Pace the producer to the fast client (whose queue is bounded
		// too); the slow one falls behind and must not hold anyone back.
		for n.Load() < int64(i+1-8) {
			if time.Now().After(deadline) {
				t.Fatalf("fast client stuck at %d of %d events: the slow peer blocked it", n.Load(), i+1)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	waitChannels(t, srv, 1) // the slow one was closed
	for n.Load() != events {
		if time.Now().After(deadline) {
			t.Fatalf("fast client got %d of %d events", n.Load(), events)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The slow peer's connection was closed. If the agent managed to
	// flush before its close deadline, the peer was also told why.
	rest := slow.readAll()
	if i := bytes.Index(rest, []byte{3, 2}); i >= 0 {
		r := tcf.NewReader(bytes.NewReader(rest[i:]), 0)
		_, err := r.ReadMessage()
		eos, ok := err.(*tcf.EOSError)
		if !ok || eos.Report == nil || eos.Report.Code != tcf.CodeBufferOverflow {
			t.Fatalf("slow peer's end of stream: %v", err)
		}
	}
	if len(rest) >= events*len(payload) {
		t.Fatalf("slow peer got %d bytes: it was not cut off", len(rest))
	}
}

// recorder is a test service: "rec" records its argument and replies at
// once; "later" defers its reply until "release" is called.
type recorder struct {
	gate    chan struct{} // closed to let "block" return
	mu      sync.Mutex
	seen    []int
	pending []*tcf.Call
	closed  map[string]bool
}

func registerRecorder(srv *tcf.Server) *recorder {
	r := &recorder{closed: map[string]bool{}, gate: make(chan struct{})}
	svc := srv.Service("Test")
	svc.Command("rec", func(c *tcf.Call) {
		a := c.Args()
		n := a.Int()
		if err := a.End(); err != nil {
			c.ReplyError(err)
			return
		}
		r.mu.Lock()
		r.seen = append(r.seen, n)
		r.mu.Unlock()
		c.Reply().Error(nil).Int64(int64(n)).Send()
	})
	svc.Command("later", func(c *tcf.Call) {
		c.Defer()
		r.mu.Lock()
		r.pending = append(r.pending, c)
		r.mu.Unlock()
	})
	svc.Command("release", func(c *tcf.Call) {
		r.mu.Lock()
		p := r.pending
		r.pending = nil
		r.mu.Unlock()
		for _, d := range p {
			d.Reply().Error(nil).String("late").Send()
		}
		c.ReplyError(nil)
	})
	svc.Command("own", func(c *tcf.Call) {
		ch := c.Channel()
		ch.OnClose(func() {
			r.mu.Lock()
			r.closed[ch.ID()] = true
			r.mu.Unlock()
		})
		c.ReplyError(nil)
	})
	svc.Command("block", func(c *tcf.Call) {
		select {
		case <-r.gate:
		case <-time.After(10 * time.Second):
		}
		c.ReplyError(nil)
	})
	svc.Command("panic", func(c *tcf.Call) { panic("handler bug") })
	svc.Command("silent", func(c *tcf.Call) {})
	svc.Command("binary", func(c *tcf.Call) {
		a := c.Args()
		data := a.Binary()
		if err := a.End(); err != nil {
			c.ReplyError(err)
			return
		}
		c.Reply().Error(nil).Uint64(uint64(len(data))).Binary(data).Send()
	})
	return r
}

func TestCommandsRunInArrivalOrder(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	rec := registerRecorder(srv)
	c := dial(t, addr, client.Options{})
	var ps []*client.Pending
	late, _ := c.Send("Test", "later")
	for i := range 500 {
		p, err := c.Send("Test", "rec", i)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	for i, p := range ps {
		res, err := p.Wait(ctx5(t))
		if err != nil {
			t.Fatal(err)
		}
		var rerr error
		var n int
		if err := res.Decode(&rerr, &n); err != nil || rerr != nil || n != i {
			t.Fatalf("reply %d: %d %v %v", i, n, rerr, err)
		}
	}
	rec.mu.Lock()
	seen := append([]int(nil), rec.seen...)
	rec.mu.Unlock()
	for i, n := range seen {
		if n != i {
			t.Fatalf("handler %d saw %d: not arrival order", i, n)
		}
	}
	select {
	case <-late.Done():
		t.Fatal("deferred reply came before release")
	default:
	}
	if _, err := c.Call(ctx5(t), "Test", "release"); err != nil {
		t.Fatal(err)
	}
	res, err := late.Wait(ctx5(t))
	if err != nil {
		t.Fatal(err)
	}
	var rerr error
	var s string
	if err := res.Decode(&rerr, &s); err != nil || s != "late" {
		t.Fatalf("deferred reply: %q %v", s, err)
	}
}

// TestRepliesDoNotWaitForSlowHandler pipelines a quick command and a slow
// one in a single write: the quick reply and a later event must arrive
// while the slow handler still runs.
func TestRepliesDoNotWaitForSlowHandler(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	rec := registerRecorder(srv)
	rc := openRaw(t, addr, "Test")
	var b tcf.Builder
	b.Command("q", "Test", "rec").Int64(1).End()
	b.Command("s", "Test", "block").End()
	wire, _ := b.Bytes()
	rc.write(wire) // one write: both commands reach the agent's buffer together
	want := string(msg("R", "q", "", "1"))
	if got := rc.readN(len(want)); string(got) != want {
		t.Fatalf("quick reply: got %q want %q", got, want)
	}
	srv.Emit("Test", "ev")
	want = string(msg("E", "Test", "ev"))
	if got := rc.readN(len(want)); string(got) != want {
		t.Fatalf("event: got %q want %q", got, want)
	}
	close(rec.gate)
	want = string(msg("R", "s", ""))
	if got := rc.readN(len(want)); string(got) != want {
		t.Fatalf("slow reply: got %q want %q", got, want)
	}
}

// TestQuickHandlerTurnedSlow: replies may wait for a handler known to be
// quick, so a quick handler that turns slow must be found out (its calls
// are still timed now and then); from then on the replies made before it
// go out while it runs.
func TestQuickHandlerTurnedSlow(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	registerRecorder(srv)
	var mode atomic.Int32 // 0 quick, 1 slow, 2 blocked on gate
	gate := make(chan struct{})
	srv.Service("Test2").Command("varies", func(c *tcf.Call) {
		switch mode.Load() {
		case 1:
			time.Sleep(200 * time.Microsecond)
		case 2:
			<-gate
		}
		c.ReplyError(nil)
	})
	rc := openRaw(t, addr, "Test", "Test2")
	call := func(n int) {
		var b tcf.Builder
		for i := range n {
			b.Command(strconv.Itoa(i), "Test2", "varies").End()
		}
		wire, _ := b.Bytes()
		rc.write(wire)
		for i := range n {
			want := string(msg("R", strconv.Itoa(i), ""))
			if got := rc.readN(len(want)); string(got) != want {
				t.Fatalf("reply %d: got %q want %q", i, got, want)
			}
		}
	}
	call(10) // quick: replies may wait for it
	mode.Store(1)
	call(tcf.TimeQuickEvery) // at least one of these is timed
	mode.Store(2)
	var b tcf.Builder
	b.Command("q", "Test", "rec").Int64(1).End()
	b.Command("s", "Test2", "varies").End()
	wire, _ := b.Bytes()
	rc.write(wire)
	want := string(msg("R", "q", "", "1"))
	if got := rc.readN(len(want)); string(got) != want {
		t.Fatalf("quick reply: got %q want %q", got, want)
	}
	close(gate)
	want = string(msg("R", "s", ""))
	if got := rc.readN(len(want)); string(got) != want {
		t.Fatalf("slow reply: got %q want %q", got, want)
	}
}

func TestHandlerBugsGetErrorReplies(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	registerRecorder(srv)
	c := dial(t, addr, client.Options{})
	for _, cmd := range []string{"panic", "silent"} {
		res, err := c.Call(ctx5(t), "Test", cmd)
		if err != nil {
			t.Fatal(err)
		}
		var rerr error
		if err := res.Decode(&rerr); err != nil || code(rerr) != tcf.CodeOther {
			t.Fatalf("%s: %v %v", cmd, rerr, err)
		}
	}
	if _, err := c.Call(ctx5(t), "Locator", "sync"); err != nil {
		t.Fatal(err)
	}
}

func TestCloseHooksRunWhenChannelCloses(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	rec := registerRecorder(srv)
	var opened []*tcf.Channel
	var mu sync.Mutex
	srv.OnChannelOpen(func(ch *tcf.Channel) { mu.Lock(); opened = append(opened, ch); mu.Unlock() })
	c := dial(t, addr, client.Options{})
	if _, err := c.Call(ctx5(t), "Test", "own"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	ch := opened[0]
	mu.Unlock()
	c.Close()
	select {
	case <-ch.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("channel not closed")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !rec.closed[ch.ID()] {
		t.Fatal("OnClose hook did not run")
	}
	// A hook registered after close runs at once.
	ran := false
	ch.OnClose(func() { ran = true })
	if !ran {
		t.Fatal("late OnClose hook did not run")
	}
}

func TestBinaryArguments(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	registerRecorder(srv)
	data := []byte("\x00\x01\x02\x03\x03\x00raw\x03\x01binary\xff")
	for _, zc := range []bool{false, true} {
		opts := client.Options{}
		if zc {
			opts.Services = []string{"ZeroCopy"}
		}
		c := dial(t, addr, opts)
		// (N)+raw when ZeroCopy is on, base64 otherwise: the agent takes both.
		p, err := c.SendFields("Test", "binary", func(b *tcf.Builder) { b.Binary(data) })
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Wait(ctx5(t))
		if err != nil {
			t.Fatal(err)
		}
		if res.Fields[2].Binary != zc {
			t.Errorf("zero copy %v: reply field raw=%v", zc, res.Fields[2].Binary)
		}
		var rerr error
		var n uint64
		var back []byte
		if err := res.Decode(&rerr, &n, &back); err != nil || rerr != nil || n != uint64(len(data)) || !bytes.Equal(back, data) {
			t.Fatalf("zero copy %v: %q %d %v %v", zc, back, n, rerr, err)
		}
		// Plain base64 is always accepted.
		res, err = c.Call(ctx5(t), "Test", "binary", "AAEC")
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Decode(&rerr, &n, &back); err != nil || n != 3 {
			t.Fatalf("base64: %d %v", n, err)
		}
		res, err = c.Call(ctx5(t), "Test", "binary", "A!==")
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Decode(&rerr); err != nil || code(rerr) != tcf.CodeBase64 {
			t.Fatalf("bad base64: %v %v", rerr, err)
		}
	}
}

func TestShutdownRunsHooksThenClosesChannels(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	c := dial(t, addr, client.Options{})
	var hookSawOpen atomic.Int64
	srv.OnShutdown(func(context.Context) {
		hookSawOpen.Store(int64(len(srv.Channels())))
		srv.Emit("Test", "bye") // still reaches the clients
	})
	var bye atomic.Bool
	c.OnEvent("Test", "bye", func(client.Event) { bye.Store(true) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	if hookSawOpen.Load() != 1 || !bye.Load() {
		t.Fatalf("hook saw %d channels, bye=%v", hookSawOpen.Load(), bye.Load())
	}
	eos, ok := c.Err().(*tcf.EOSError)
	if !ok || eos.Report == nil || eos.Report.Code != tcf.CodeChannelClosed {
		t.Fatalf("client error after shutdown: %v", c.Err())
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Fatal("still accepting after shutdown")
	}
}

func TestNoGoroutinesLeftAfterClose(t *testing.T) {
	base := runtime.NumGoroutine()
	func() {
		srv := tcf.NewServer(tcf.Config{Logger: quietLogger()})
		tcf.RegisterDiagnostics(srv)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		serveDone := make(chan struct{})
		go func() { srv.Serve(l); close(serveDone) }()
		var cs []*client.Client
		for range 10 {
			c, err := client.DialTimeout(l.Addr().String(), client.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Call(ctx5(t), "Diagnostics", "echo", "x"); err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		// Half close from the client side, half by the agent's shutdown;
		// plus a raw connection that dies mid-message.
		for _, c := range cs[:5] {
			c.Close()
		}
		raw, _ := net.Dial("tcp", l.Addr().String())
		raw.Write([]byte("C\x001\x00Loc"))
		raw.Close()
		waitChannels(t, srv, 5)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		<-serveDone
		for _, c := range cs[5:] {
			<-c.Done()
			c.Close()
		}
	}()
	checkGoroutines(t, base)
}

// TestHelloFirstDespiteEvents connects while events are being broadcast:
// the agent's Hello must still be the first message of every channel.
func TestHelloFirstDespiteEvents(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				srv.Emit("Test", "noise", 1)
			}
		}
	}()
	for range 20 {
		rc := dialRaw(t, addr)
		if got := rc.readN(len(helloGolden)); string(got) != helloGolden {
			t.Errorf("first message %q", got)
		}
		rc.conn.Close()
	}
	close(stop)
	<-done
}

// TestReplyNotHeldByPartialNextCommand: a command's reply goes out even when
// the start of the next command came with it and its rest does not come
// (the agent holds replies while more input is waiting, but not for long).
func TestReplyNotHeldByPartialNextCommand(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	registerRecorder(srv)
	rc := openRaw(t, addr, "Test")
	first := msg("C", "a", "Test", "rec", "1")
	next := msg("C", "b", "Test", "rec", "2")
	rc.write(append(append([]byte(nil), first...), next[:5]...))
	want := string(msg("R", "a", "", "1"))
	if got := rc.readN(len(want)); string(got) != want {
		t.Fatalf("reply to the first command: got %q want %q", got, want)
	}
	rc.write(next[5:])
	want = string(msg("R", "b", "", "2"))
	if got := rc.readN(len(want)); string(got) != want {
		t.Fatalf("reply to the second command: got %q want %q", got, want)
	}
}

// TestDeferredCallsKeepTheirTokens: the channel reuses a finished Call for
// its next command, but never one that was deferred: replies sent later
// must carry their own command's token, whatever ran in between.
func TestDeferredCallsKeepTheirTokens(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	registerRecorder(srv)
	rc := openRaw(t, addr, "Test")
	var b tcf.Builder
	b.Command("d1", "Test", "later").End()
	for i, tok := range []string{"r1", "r2", "r3"} {
		b.Command(tok, "Test", "rec").Int64(int64(i)).End()
	}
	b.Command("d2", "Test", "later").End()
	b.Command("r4", "Test", "rec").Int64(4).End()
	b.Command("x", "Test", "release").End()
	wire, _ := b.Bytes()
	rc.write(wire)
	var want []byte
	for i, tok := range []string{"r1", "r2", "r3"} {
		want = append(want, msg("R", tok, "", fmt.Sprint(i))...)
	}
	want = append(want, msg("R", "r4", "", "4")...)
	want = append(want, msg("R", "d1", "", `"late"`)...)
	want = append(want, msg("R", "d2", "", `"late"`)...)
	want = append(want, msg("R", "x", "")...)
	if got := rc.readN(len(want)); string(got) != string(want) {
		t.Fatalf("replies:\n got %q\nwant %q", got, want)
	}
}

// TestCallAnsweredByAnotherGoroutine: a deferred command answered at once
// from another goroutine may be answered before its handler returns; the
// channel must not reuse that Call while the other goroutine still finishes
// its Send (go test -race sees the overlap when it does).
func TestCallAnsweredByAnotherGoroutine(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	svc := srv.Service("Fast")
	svc.Command("defer", func(c *tcf.Call) {
		c.Defer()
		tok := c.Token()
		go c.Reply().Error(nil).String(tok).Send()
		runtime.Gosched() // let the reply start before the handler returns
	})
	svc.Command("now", func(c *tcf.Call) { c.Reply().Error(nil).String(c.Token()).Send() })
	c := dial(t, addr, client.Options{})
	ctx := ctx5(t)
	var ps []*client.Pending
	for i := range 400 {
		cmd := "now"
		if i%2 == 0 {
			cmd = "defer"
		}
		p, err := c.Send("Fast", cmd)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	for _, p := range ps {
		r, err := p.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var e error
		var tok string
		if err := r.Decode(&e, &tok); err != nil || e != nil || tok != p.Token() {
			t.Fatalf("command %s answered %q (%v, %v)", p.Token(), tok, e, err)
		}
	}
}
