package tcf_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// fixedTime is the clock of test servers, so error reports are golden.
var fixedTime = time.UnixMilli(1700000000123)

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startServer runs a server with Diagnostics on a loopback port and returns
// it with its address; it is shut down when the test ends, and the test
// fails if goroutines are left over.
func startServer(t testing.TB, cfg tcf.Config) (*tcf.Server, string) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return fixedTime }
	}
	if cfg.AgentID == "" {
		cfg.AgentID = "00000000-1111-4222-8333-444444444444"
	}
	if _, bench := t.(*testing.B); bench && cfg.ReadSpin == 0 {
		// As in tcf/services' benchmarks: in process the reader's spin only
		// takes a P from the client; bench/tcf measures it across processes.
		cfg.ReadSpin = -1
	}
	base := runtime.NumGoroutine()
	srv := tcf.NewServer(cfg)
	tcf.RegisterDiagnostics(srv)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		// Every test doubles as a goroutine-leak check: clients were
		// closed by their own cleanups (which run first).
		checkGoroutines(t, base)
	})
	return srv, l.Addr().String()
}

func dial(t testing.TB, addr string, opts client.Options) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctx5(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// rawConn is a plain TCP connection for byte-exact tests.
type rawConn struct {
	t    testing.TB
	conn net.Conn
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawConn{t: t, conn: conn}
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	if _, err := r.conn.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

// readUntil reads raw bytes until the input ends with want's length of
// bytes or the deadline passes; it returns everything read.
func (r *rawConn) readN(n int) []byte {
	r.t.Helper()
	r.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, n)
	if _, err := io.ReadFull(r.conn, buf); err != nil {
		r.t.Fatalf("reading %d bytes: %v (got %q)", n, err, buf)
	}
	return buf
}

// readAll reads until the agent closes the connection.
func (r *rawConn) readAll() []byte {
	r.t.Helper()
	r.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(r.conn)
	if err != nil {
		r.t.Fatalf("reading to EOF: %v (got %d bytes)", err, len(b))
	}
	return b
}

// checkGoroutines fails if the goroutine count does not come back to base
// within a few seconds (a tiny goleak).
func checkGoroutines(t testing.TB, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines left, want <= %d:\n%s", n, base, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitChannels waits until the server has n open channels.
func waitChannels(t testing.TB, srv *tcf.Server, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(srv.Channels()) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d channels open, want %d", len(srv.Channels()), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
