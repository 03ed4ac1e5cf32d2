package services_test

import (
	"context"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/tcf/client"
	"github.com/sondedbg/sonde/variables/vartest"
)

// BenchmarkExpressionsFrameLocals is a Variables view refresh over the wire:
// Expressions.getChildren of a frame with 50 locals, then evaluate of each,
// sent pipelined as a client does, on a core (warm: the stack, scopes and
// types are cached by the first refresh).
func BenchmarkExpressionsFrameLocals(b *testing.B) {
	exe := testprog.Build(b, testprog.Spec{Sources: []string{"ex_many.c"}, Flags: []string{"-O0"}})
	stop := vartest.GDBStop(b, exe, "stop_here", map[int][]string{1: {"v0"}})
	tgt, th := stop.Open(b)
	c, _ := serveTarget(b, tgt)
	thread := string(th.ID())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var rerr error
	var frames []string
	r, err := c.Call(ctx, "StackTrace", "getChildrenRange", thread, 0, 3)
	if err != nil {
		b.Fatal(err)
	}
	r.Decode(&rerr, &frames)
	refresh := func() int {
		r, err := c.Call(ctx, "Expressions", "getChildren", frames[1])
		if err != nil {
			b.Fatal(err)
		}
		var ids []string
		r.Decode(&rerr, &ids)
		pending := make([]*client.Pending, 0, len(ids))
		for _, id := range ids {
			p, err := c.Send("Expressions", "evaluate", id)
			if err != nil {
				b.Fatal(err)
			}
			pending = append(pending, p)
		}
		for _, p := range pending {
			res, err := p.Wait(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var val []byte
			var props map[string]any
			if res.Decode(&val, &rerr, &props); rerr != nil {
				b.Fatal(rerr)
			}
		}
		return len(ids)
	}
	if n := refresh(); n < 50 {
		b.Fatalf("%d locals", n)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		refresh()
	}
}
