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
