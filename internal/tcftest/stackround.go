// Package tcftest holds what sonde's tests and benchmarks of TCF agents
// share: the request round a debugger makes to show a stack, and an agent
// that answers it from canned replies.
package tcftest

import (
	"context"
	"slices"
	"testing"

	"github.com/sondedbg/sonde/tcf/client"
)

// StackRound is one client's round to show a stopped thread's stack with
// names and lines, as a debugger issues it: StackTrace.getChildren;
// getContext of all frames; Symbols.findByAddr and LineNumbers.mapToSource
// per frame (IP-1 for callers); Symbols.getContext per symbol; each wave
// pipelined, the last two overlapping (a symbol's properties are asked for
// as its findByAddr answer comes). It returns the frames' function names,
// innermost first, and fails tb on any error.
//
// Only what the next wave needs is decoded (and the names): a benchmark of
// the round measures the agent more than the client's JSON decoding.
func StackRound(tb testing.TB, c *client.Client, thread string) []string {
	ctx := context.Background()
	wait := func(p *client.Pending, dst ...any) {
		r, err := p.Wait(ctx)
		if err == nil {
			err = r.Decode(dst...)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	send := func(svc, cmd string, args ...any) *client.Pending {
		p, err := c.Send(svc, cmd, args...)
		if err != nil {
			tb.Fatal(err)
		}
		return p
	}
	var e error
	var ids []string
	wait(send("StackTrace", "getChildren", thread), &e, &ids)
	var frames []struct{ IP uint64 }
	wait(send("StackTrace", "getContext", ids), &frames, &e)
	// getChildren is bottom-first: the top frame is last.
	slices.Reverse(frames)
	syms := make([]*client.Pending, len(frames))
	lines := make([]*client.Pending, len(frames))
	for i, f := range frames {
		ip := f.IP
		if i > 0 {
			ip--
		}
		syms[i] = send("Symbols", "findByAddr", thread, ip)
		lines[i] = send("LineNumbers", "mapToSource", thread, ip, ip+1)
	}
	props := make([]*client.Pending, len(frames))
	for i := range frames {
		var id string
		wait(syms[i], &e, &id)
		wait(lines[i], &e, nil)
		props[i] = send("Symbols", "getContext", id)
	}
	names := make([]string, len(frames))
	for i := range frames {
		var p struct{ Name string }
		wait(props[i], &e, &p)
		names[i] = p.Name
	}
	return names
}
