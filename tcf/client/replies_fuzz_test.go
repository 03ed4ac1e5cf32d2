package client

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
)

// FuzzReplies: an agent that answers with arbitrary bytes (replies to
// pending tokens, unknown tokens, N replies, events including a Locator
// Hello, broken framing, binary fields). The client never panics, every
// pending command is answered or failed once the connection ends (none
// hangs), and decoding any reply or event into every kind of destination
// returns values or an error.
func FuzzReplies(f *testing.F) {
	for _, s := range []string{
		"E\x00Locator\x00Hello\x00[\"ZeroCopy\",\"RunControl\"]\x00\x03\x01R\x001\x00\x00\"x\"\x00\x03\x01",
		"R\x001\x00{\"Code\":1,\"Format\":\"bad\",\"Time\":0}\x00[\"a\",\"b\"]\x00\x03\x01N\x002\x00\x03\x01",
		"R\x002\x00\x03\x03\x05hello\x00{\"ID\":\"P1\",\"N\":5}\x00\x03\x01R\x003\x0018446744073709551615\x00\x03\x01",
		"R\x003\x00-1\x00true\x00\x03\x01R\x001\x00null\x00\x03\x01E\x00RunControl\x00contextSuspended\x00\"P1\"\x00\x03\x01",
		"R\x0099999999999999999999\x00\x00\x03\x01R\x001\x00[\x00\x03\x01\x03\x02",
		"E\x00Locator\x00Hello\x00{}\x00\x03\x01R\x001\x00\"\\ud800\"\x00\x03\x01",
		"R\x001\x00\x03\x03\xff\xff\xff\xff\x0f\x03\x01",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		agent, conn := net.Pipe()
		c := New(conn, Options{NoHello: true, Services: []string{"ZeroCopy"}, MaxMessageSize: 1 << 16})
		defer c.Close()
		c.OnEvent("", "", func(ev Event) {
			decodeEvery(ev.Decode)
			a := ev.Args()
			for a.Remaining() > 0 && a.Err() == nil {
				a.Ignore()
			}
		})
		var pend []*Pending
		for i := 0; i < 3; i++ {
			p, err := c.Send("S", "c", "P1", i)
			if err != nil {
				t.Fatal(err)
			}
			pend = append(pend, p)
		}
		go io.Copy(io.Discard, agent) // the client's commands
		go func() {
			agent.Write(stream)
			agent.Close()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, p := range pend {
			res, err := p.Wait(ctx)
			if ctx.Err() != nil {
				t.Fatalf("token %s never answered after the agent closed", p.Token())
			}
			if err == nil {
				decodeEvery(res.Decode)
				res.Raw()
			}
		}
	})
}

// decodeEvery decodes fields into each kind of destination Decode takes;
// the answers do not matter, only that they come without a panic.
func decodeEvery(decode func(dst ...any) error) {
	var (
		e   error
		s   string
		u   uint64
		i64 int64
		n   int
		b   bool
		bs  []byte
		ss  []string
		pr  tcf.Props
		raw json.RawMessage
		m   map[string]any
		a   []any
	)
	decode(&e, &s)
	decode(&e, &u, &i64)
	decode(&n, &b, &bs)
	decode(&ss)
	decode(&e, &pr)
	decode(&raw, nil)
	decode(&m)
	decode(&a, &a, &a)
	decode()
}
