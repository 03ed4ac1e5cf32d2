package tcf_test

import (
	"sync"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// TestEmitBehind: an event queued behind goes out with the next one, in
// order, and on its own (the writer's timer) when no other follows.
func TestEmitBehind(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	c := dial(t, addr, client.Options{})
	var mu sync.Mutex
	var got []string
	arrived := make(chan struct{}, 16)
	c.OnEvent("Test", "", func(e client.Event) {
		mu.Lock()
		got = append(got, e.Name)
		mu.Unlock()
		arrived <- struct{}{}
	})
	waitChannels(t, srv, 1)
	wait := func(n int) []string {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			mu.Lock()
			k := len(got)
			mu.Unlock()
			if k >= n {
				break
			}
			select {
			case <-arrived:
			case <-deadline:
				t.Fatalf("%d of %d events arrived", k, n)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}

	// Followed by another event: both arrive, in order.
	if err := srv.EmitBehind("Test", "status"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Emit("Test", "stopped"); err != nil {
		t.Fatal(err)
	}
	if g := wait(2); g[0] != "status" || g[1] != "stopped" {
		t.Fatalf("got %v", g)
	}

	// Alone: the timer sends it.
	start := time.Now()
	if err := srv.EmitBehind("Test", "alone"); err != nil {
		t.Fatal(err)
	}
	if g := wait(3); g[2] != "alone" {
		t.Fatalf("got %v", g)
	}
	t.Logf("an event alone behind arrived after %v", time.Since(start))

	// Many behind, then nothing: all arrive, in order.
	for _, n := range []string{"a", "b", "c"} {
		if err := srv.EmitBehind("Test", n); err != nil {
			t.Fatal(err)
		}
	}
	if g := wait(6); g[3] != "a" || g[4] != "b" || g[5] != "c" {
		t.Fatalf("got %v", g)
	}
}

// TestReplySendBehind: a reply sent behind after the handler returned (as a
// resume's reply is, from the tracer thread) keeps its place in front of the
// event that follows it; alone, it still arrives (the behind timer).
func TestReplySendBehind(t *testing.T) {
	srv, addr := startServer(t, tcf.Config{})
	calls := make(chan *tcf.Call, 1)
	srv.Service("Test").Command("later", func(c *tcf.Call) {
		c.Defer()
		calls <- c
	})
	rc := openRaw(t, addr, "Test")

	// Behind, then an event: one stream, reply first.
	rc.write(msg("C", "1", "Test", "later"))
	call := <-calls
	call.Reply().Error(nil).SendBehind()
	if err := srv.Emit("Test", "stopped"); err != nil {
		t.Fatal(err)
	}
	want := string(msg("R", "1", "")) + string(msg("E", "Test", "stopped"))
	if got := rc.readN(len(want)); string(got) != want {
		t.Fatalf("behind reply then event:\n got %q\nwant %q", got, want)
	}

	// Alone: it still comes.
	rc.write(msg("C", "2", "Test", "later"))
	call = <-calls
	call.Reply().Error(nil).SendBehind()
	want = string(msg("R", "2", ""))
	if got := rc.readN(len(want)); string(got) != want {
		t.Fatalf("behind reply alone:\n got %q\nwant %q", got, want)
	}
}
