package tcf_test

import (
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// writeLog is a listener whose connections record the size of each write
// (they have no socket for tcf.RawSocket: the channel writes through them).
type writeLog struct {
	net.Listener
	mu     sync.Mutex
	writes []int
}

func (l *writeLog) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &loggedConn{Conn: c, log: l}, nil
}

type loggedConn struct {
	net.Conn
	log *writeLog
}

func (c *loggedConn) Write(p []byte) (int, error) {
	c.log.mu.Lock()
	c.log.writes = append(c.log.writes, len(p))
	c.log.mu.Unlock()
	return c.Conn.Write(p)
}

// A burst of commands read at once is answered in pieces of about
// tcf.ReplyChunk, not in one write after the last command: a client that
// reads replies as they come works on the first ones meanwhile.
func TestRepliesOfABurstInPieces(t *testing.T) {
	srv := tcf.NewServer(tcf.Config{Logger: quietLogger()})
	tcf.RegisterDiagnostics(srv)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &writeLog{Listener: inner}
	go srv.Serve(l)
	defer srv.Shutdown(ctx5(t))
	c := dial(t, inner.Addr().String(), client.Options{})

	// The burst goes out in one write (tokens the client does not know:
	// their replies are dropped), and a last call waits for its replies.
	payload := strings.Repeat("x", 100)
	const n = 200 // ~25 KB of replies
	var b tcf.Builder
	var burst []byte
	for i := range n {
		b.Start(burst)
		b.CommandNumbered(uint64(1_000_000+i), "Diagnostics", "echo").Data(payload).End()
		burst, _ = b.Bytes()
	}
	if err := c.SendRaw(burst); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(ctx5(t), "Diagnostics", "echo", "last"); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	total, big := 0, 0
	for _, w := range l.writes {
		total += w
		if w > tcf.ReplyChunk+len(payload)+64 {
			big++
		}
	}
	if pieces := len(l.writes); pieces < total/(2*tcf.ReplyChunk) || big > 0 {
		t.Fatalf("%d bytes of replies in %d writes (%d over %d bytes): %v", total, pieces, big, tcf.ReplyChunk, l.writes)
	}
}
