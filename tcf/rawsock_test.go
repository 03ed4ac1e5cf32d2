package tcf_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (a, b net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	a, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b = <-accepted
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// TestRawSocket: reads and writes through raw system calls carry every byte
// both ways, also more than the socket buffers hold; the peer's close is
// io.EOF; a read deadline and a Close of the connection end a waiting
// Read; a spinning Read takes data that arrives while it spins and one that
// arrives after it gave up.
func TestRawSocket(t *testing.T) {
	for _, spin := range []time.Duration{0, 200 * time.Microsecond} {
		a, b := tcpPair(t)
		ra, rb := tcf.NewRawSocket(a), tcf.NewRawSocket(b)
		if ra == nil || rb == nil {
			t.Fatal("no raw socket for a TCP connection")
		}
		ra.Spin, rb.Spin = spin, spin
		ra.SpinOnce()
		rb.SpinOnce()

		// 8 MiB one way while reading it on the other: Write must wait for
		// room (the socket buffers are far smaller).
		want := make([]byte, 8<<20)
		for i := range want {
			want[i] = byte(i * 7)
		}
		errc := make(chan error, 1)
		go func() {
			n, err := ra.Write(want)
			if err == nil && n != len(want) {
				err = io.ErrShortWrite
			}
			errc <- err
		}()
		got := make([]byte, len(want))
		if _, err := io.ReadFull(rb, got); err != nil {
			t.Fatalf("spin %v: read: %v", spin, err)
		}
		if err := <-errc; err != nil {
			t.Fatalf("spin %v: write: %v", spin, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("spin %v: the bytes read differ from those written", spin)
		}

		// Data that comes later than any spin.
		go func() {
			time.Sleep(20 * time.Millisecond)
			rb.Write([]byte("late"))
		}()
		buf := make([]byte, 16)
		if n, err := ra.Read(buf); err != nil || string(buf[:n]) != "late" {
			t.Fatalf("spin %v: late data: %q %v", spin, buf[:n], err)
		}

		// A deadline ends a waiting Read.
		a.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := ra.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("spin %v: read past the deadline: %v", spin, err)
		}
		a.SetReadDeadline(time.Time{})

		// The peer closes: EOF; writing to it eventually fails.
		b.Close()
		if _, err := ra.Read(buf); err != io.EOF {
			t.Fatalf("spin %v: read after the peer closed: %v", spin, err)
		}
		var werr error
		for i := 0; i < 100 && werr == nil; i++ {
			_, werr = ra.Write([]byte("x"))
			time.Sleep(time.Millisecond)
		}
		if werr == nil {
			t.Fatalf("spin %v: writes to a closed peer kept succeeding", spin)
		}
	}

	// Close of our own end ends a waiting Read.
	a, _ := tcpPair(t)
	ra := tcf.NewRawSocket(a)
	errc := make(chan error, 1)
	go func() {
		_, err := ra.Read(make([]byte, 8))
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	a.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("read on a closed connection succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a waiting read")
	}
}

// TestRawSocketTryWrite: TryWrite never waits: into a socket whose peer does
// not read it writes what fits and stops.
func TestRawSocketTryWrite(t *testing.T) {
	a, b := tcpPair(t)
	ra := tcf.NewRawSocket(a)
	big := make([]byte, 64<<20)
	start := time.Now()
	n, ok := ra.TryWrite(big)
	if !ok || n <= 0 || n >= len(big) {
		t.Fatalf("TryWrite into a full socket: %d of %d bytes, ok=%v", n, len(big), ok)
	}
	t.Logf("the socket took %d bytes in %v", n, time.Since(start))
	b.Close()
	if nc := tcf.NewRawSocket(pipeConn{}); nc != nil {
		t.Fatal("a connection without a socket got a RawSocket")
	}
}

// pipeConn is a net.Conn without a socket.
type pipeConn struct{ net.Conn }
