package tcf_test

import (
	"context"
	"testing"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// The benchmarks run sonde's own server and the Go client over loopback
// TCP in one process, like the figures for the C agent (15.3k round
// trips/s, 276k pipelined commands/s on these VMs).

// BenchmarkRoundTrip: one trivial command (Diagnostics.echo) at a time,
// waiting for each reply.
func BenchmarkRoundTrip(b *testing.B) {
	_, addr := startServer(b, tcf.Config{})
	c := dial(b, addr, client.Options{})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := c.Call(ctx, "Diagnostics", "echo", "ping")
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Fields) != 1 {
			b.Fatal("bad reply")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
}

// BenchmarkPipelined64: 64 commands sent back to back, then all replies
// awaited; the metric counts commands.
func BenchmarkPipelined64(b *testing.B) {
	_, addr := startServer(b, tcf.Config{})
	c := dial(b, addr, client.Options{})
	ctx := context.Background()
	ps := make([]*client.Pending, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i := range ps {
			p, err := c.Send("Diagnostics", "echo", "ping")
			if err != nil {
				b.Fatal(err)
			}
			ps[i] = p
		}
		for _, p := range ps {
			if _, err := p.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(64*b.N)/b.Elapsed().Seconds(), "cmds/s")
}

// BenchmarkEventBroadcast: one event to 4 channels, until every client got it.
func BenchmarkEventBroadcast(b *testing.B) {
	srv, addr := startServer(b, tcf.Config{})
	const clients = 4
	got := make(chan struct{}, 1024)
	for range clients {
		c := dial(b, addr, client.Options{})
		c.OnEvent("Test", "tick", func(client.Event) { got <- struct{}{} })
	}
	waitChannels(b, srv, clients)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		srv.Emit("Test", "tick", "P1234.1234", uint64(0x7fffffffe000), "Breakpoint", map[string]any{"BPs": []string{"bp1"}})
		for range clients {
			<-got
		}
	}
}

// BenchmarkReadMessage: decoding a typical command from memory.
func BenchmarkReadMessage(b *testing.B) {
	var bld tcf.Builder
	for range 1000 {
		bld.Command("123", "Memory", "get").String("P1234").Uint64(0x7fffffffe000).Int64(1).Int64(64).Int64(0).End()
	}
	wire, _ := bld.Bytes()
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		r := tcf.NewReader(bytesReader(wire), 0)
		for range 1000 {
			if _, err := r.ReadMessage(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkBinaryReply1MiB: a command answered with 1 MiB of binary data
// (the shape of Memory.get), base64 for clients without ZeroCopy (Python)
// and raw "(N)" blocks for clients with it (Java, the Go client).
func BenchmarkBinaryReply1MiB(b *testing.B) {
	for _, zc := range []bool{false, true} {
		name := "base64"
		opts := client.Options{}
		if zc {
			name, opts.Services = "zerocopy", []string{"ZeroCopy"}
		}
		b.Run(name, func(b *testing.B) {
			srv, addr := startServer(b, tcf.Config{})
			data := make([]byte, 1<<20)
			for i := range data {
				data[i] = byte(i * 7)
			}
			srv.Service("Test").Command("blob", func(c *tcf.Call) {
				c.Reply().Binary(data).Error(nil).Null().Send()
			})
			c := dial(b, addr, opts)
			ctx := context.Background()
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for b.Loop() {
				res, err := c.Call(ctx, "Test", "blob")
				if err != nil {
					b.Fatal(err)
				}
				var got []byte
				var rerr error
				if err := res.Decode(&got, &rerr, nil); err != nil || len(got) != len(data) {
					b.Fatal(err, len(got))
				}
			}
		})
	}
}
