package tcf_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// Large replies reuse the buffers of large replies already written: each
// reply of a pipelined burst still carries its own bytes, whether it went
// out as the queue itself or was copied behind a queued one, base64 or raw.
func TestLargeRepliesKeepTheirBytes(t *testing.T) {
	for _, zc := range []bool{false, true} {
		opts := client.Options{}
		if zc {
			opts.Services = []string{"ZeroCopy"}
		}
		srv, addr := startServer(t, tcf.Config{})
		// blob(n, size): size bytes, each 8-byte word holding n and its index.
		srv.Service("Test").Command("blob", func(c *tcf.Call) {
			args := c.Args()
			n, size := args.Uint64(), args.Int()
			if err := args.End(); err != nil {
				c.Reply().Null().Error(err).Send()
				return
			}
			data := make([]byte, size)
			for i := 0; i+8 <= size; i += 8 {
				binary.LittleEndian.PutUint64(data[i:], n<<32|uint64(i))
			}
			c.Reply().Binary(data).Error(nil).Send()
		})
		// The client reads nothing until every reply was made, so that
		// replies wait in the agent's queue while later ones are built.
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		gate := make(chan struct{})
		c := client.New(&gatedConn{Conn: conn, gate: gate}, opts)
		t.Cleanup(func() { c.Close() })
		want := func(n uint64, size int) []byte {
			data := make([]byte, size)
			for i := 0; i+8 <= size; i += 8 {
				binary.LittleEndian.PutUint64(data[i:], n<<32|uint64(i))
			}
			return data
		}
		ctx := context.Background()
		for round := 0; round < 3; round++ {
			var pending []*client.Pending
			var sizes []int
			for k := 0; k < 5; k++ {
				size := 3<<20 - (round*5+k)*40<<10 // large, each smaller than the last
				if k == 2 {
					size = 64 // a small one among them
				}
				p, err := c.Send("Test", "blob", uint64(round*5+k), size)
				if err != nil {
					t.Fatal(err)
				}
				pending, sizes = append(pending, p), append(sizes, size)
			}
			if round == 0 {
				time.Sleep(300 * time.Millisecond) // the agent answers all five
				close(gate)
			}
			for k, p := range pending {
				res, err := p.Wait(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var got []byte
				var rerr error
				if err := res.Decode(&got, &rerr); err != nil || rerr != nil {
					t.Fatalf("zerocopy %v, reply %d: %v %v", zc, round*5+k, err, rerr)
				}
				if !bytes.Equal(got, want(uint64(round*5+k), sizes[k])) {
					t.Fatalf("zerocopy %v, reply %d (%d bytes): wrong bytes", zc, round*5+k, sizes[k])
				}
			}
		}
	}
}

// gatedConn is a connection whose reads wait until gate is closed.
type gatedConn struct {
	net.Conn
	gate chan struct{}
}

func (g *gatedConn) Read(p []byte) (int, error) {
	<-g.gate
	return g.Conn.Read(p)
}
