package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// agent starts a tcf.Server with a "Test" service whose "hold" command
// never answers until the channel closes.
func agent(t *testing.T) string {
	t.Helper()
	srv := tcf.NewServer(tcf.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tcf.RegisterDiagnostics(srv)
	srv.Service("Test").Command("hold", func(c *tcf.Call) { c.Defer() })
	srv.Service("Test").Command("pair", func(c *tcf.Call) {
		c.Reply().Error(nil).Uint64(1<<64 - 1).Send()
	})
	return serve(t, srv)
}

// serve runs srv on a loopback port until the test ends and returns its
// address.
func serve(tb testing.TB, srv *tcf.Server) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go srv.Serve(l)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return l.Addr().String()
}

// dialAgent connects a client to a new test agent (see agent); the context
// bounds the test's calls.
func dialAgent(t *testing.T) (*client.Client, context.Context) {
	t.Helper()
	addr := agent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	c, err := client.Dial(ctx, addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, ctx
}

func TestClient(t *testing.T) {
	c, ctx := dialAgent(t)

	// N replies become ErrNotRecognized.
	if _, err := c.Call(ctx, "Test", "nope"); !errors.Is(err, client.ErrNotRecognized) {
		t.Fatalf("unknown command: %v", err)
	}

	// Decode checks the field count and keeps 64-bit integers exact.
	res, err := c.Call(ctx, "Test", "pair")
	if err != nil {
		t.Fatal(err)
	}
	var rerr error
	var v uint64
	if err := res.Decode(&rerr, &v); err != nil || rerr != nil || v != 1<<64-1 {
		t.Fatalf("Decode: %v %v %d", err, rerr, v)
	}
	if err := res.Decode(&rerr); err == nil {
		t.Fatal("Decode with too few destinations did not fail")
	}
	var s string
	if err := res.Decode(&rerr, &s); err == nil {
		t.Fatal("Decode of an integer into a string did not fail")
	}

	// Wait honours its context.
	held, err := c.Send("Test", "hold")
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	if _, err := held.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait: %v", err)
	}

	// Close fails what is pending, and later sends.
	c.Close()
	if _, err := held.Wait(ctx); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("pending after Close: %v", err)
	}
	if _, err := c.Send("Locator", "sync"); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
}

// fakePeer listens on loopback and, for the first connection, sends a
// Hello offering services and then runs serve. It returns the address.
func fakePeer(t *testing.T, services []string, serve func(conn net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		var b tcf.Builder
		b.Event("Locator", "Hello").Data(services).End()
		hello, _ := b.Bytes()
		conn.Write(hello)
		serve(conn)
	}()
	return l.Addr().String()
}

func TestClientSeesAgentGoAway(t *testing.T) {
	// A peer that says Hello and then ends the stream with a report.
	addr := fakePeer(t, []string{"Locator"}, func(conn net.Conn) {
		conn.Write([]byte("\x03\x02{\"Code\":5,\"Time\":1,\"Format\":\"bye\"}\x00\x03\x01"))
	})
	c, err := client.DialTimeout(addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-c.Done()
	var eos *tcf.EOSError
	if !errors.As(c.Err(), &eos) || eos.Report == nil || eos.Report.Message() != "bye" {
		t.Fatalf("client error %v", c.Err())
	}
}

// Small replies share memory blocks: a result's bytes stay its own when a
// caller appends to them, and replies with tokens this client never sent
// (a peer's mistake) are dropped without disturbing the pending commands.
func TestResultsOwnTheirBytes(t *testing.T) {
	addr := fakePeer(t, []string{"Locator", "Test"}, func(conn net.Conn) {
		var b tcf.Builder
		rd := tcf.NewReader(conn, 0)
		for {
			m, err := rd.ReadMessage()
			if err != nil {
				return
			}
			if m.Kind != 'C' {
				continue
			}
			// Stray replies first: a token that is not a number, one out of
			// range, one never used.
			b.Result('R', []byte("x1")).String("stray").End()
			b.Result('R', []byte("99999999999999999999999")).String("stray").End()
			b.Result('R', []byte("4242")).String("stray").End()
			b.Result('R', m.Token).String(string(m.Name)).End()
			msg, _ := b.Bytes()
			conn.Write(msg)
			b.Reset()
		}
	})
	c, err := client.DialTimeout(addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var ps []*client.Pending
	for _, name := range []string{"one", "two", "three"} {
		p, err := c.Send("Test", name)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	var rs []*client.Result
	for _, p := range ps {
		r, err := p.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	rs[0].Fields[0].Data = append(rs[0].Fields[0].Data, "XXXXXXXX"...)
	for i, want := range []string{`"one"XXXXXXXX`, `"two"`, `"three"`} {
		if got := string(rs[i].Fields[0].Data); got != want {
			t.Fatalf("result %d: %s, want %s", i, got, want)
		}
	}
	if tok := ps[2].Token(); tok != "3" {
		t.Fatalf("third token %q", tok)
	}
}

// TestPendingDone: a command's Done channel, asked for before or after its
// answer came, is closed once it came; a command never answered is closed
// (with ErrClosed) when the client closes; Wait gives the same either way.
func TestPendingDone(t *testing.T) {
	c, ctx := dialAgent(t)
	hold, err := c.Send("Test", "hold")
	if err != nil {
		t.Fatal(err)
	}
	early, err := c.Send("Diagnostics", "echo", "x")
	if err != nil {
		t.Fatal(err)
	}
	before := early.Done() // asked for while (most likely) unanswered
	select {
	case <-before:
	case <-ctx.Done():
		t.Fatal("Done asked for before the answer was never closed")
	}
	select {
	case <-early.Done(): // after the answer: closed at once
	default:
		t.Fatal("Done after the answer is not closed")
	}
	var s string
	if r, err := early.Wait(ctx); err != nil || r.Decode(&s) != nil || s != "x" {
		t.Fatalf("echo: %q, %v", s, err)
	}
	holdDone := hold.Done()
	select {
	case <-holdDone:
		t.Fatal("an unanswered command is done")
	default:
	}
	c.Close()
	select {
	case <-holdDone:
	case <-ctx.Done():
		t.Fatal("Close did not end the unanswered command")
	}
	if _, err := hold.Wait(ctx); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("unanswered command after Close: %v", err)
	}
}

// A client whose reader polls for replies (Options.ReadSpin) on one P: the
// goroutine waiting for a reply must get the P while the reader polls for
// the next one, in sequential calls and pipelined bursts alike. The spin is
// longer than the test may take: a reader that kept the P to itself would
// run the context out; Close must end it.
func TestReadSpin(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	addr := agent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{ReadSpin: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 100 {
		res, err := c.Call(ctx, "Diagnostics", "echo", strconv.Itoa(i))
		var s string
		if err == nil {
			err = res.Decode(&s)
		}
		if err != nil || s != strconv.Itoa(i) {
			t.Fatalf("call %d: %q, %v", i, s, err)
		}
	}
	// The burst is longer than the pieces a polling client writes it in.
	pad := strings.Repeat(" ", 200)
	var ps []*client.Pending
	for i := range 64 {
		p, err := c.Send("Diagnostics", "echo", strconv.Itoa(i)+pad)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	for i, p := range ps {
		res, err := p.Wait(ctx)
		var s string
		if err == nil {
			err = res.Decode(&s)
		}
		if err != nil || s != strconv.Itoa(i)+pad {
			t.Fatalf("pipelined %d: %q, %v", i, s, err)
		}
	}
}
