package services_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sondedbg/sonde/tcf/services"
)

// A client that shows the stack at every stop gets the stack of the stop it
// asks at, never the previous one's (the agent caches each stop's walk and
// its encoded answers until the thread runs).
func TestLiveStackAfterEachStop(t *testing.T) {
	la := startLive(t)
	_, thread := la.stoppedAtMain("deep", "5", "loop")
	la.ok("Breakpoints", "add", map[string]any{"ID": "b", "Location": "bottom"})
	la.ok("Breakpoints", "add", map[string]any{"ID": "h", "Location": "hit"})
	la.resume(thread, 0)
	name, n := la.topOfStack(thread)
	if name != "bottom" {
		t.Fatalf("first stop in %s, want bottom", name)
	}
	// Every stop's stack differs from the previous one's: hit() (one frame
	// more), then back in bottom() after stepping out.
	for i := 0; i < 10; i++ {
		la.resume(thread, 0)
		if got, m := la.topOfStack(thread); got != "hit" || m != n+1 {
			t.Fatalf("round %d: top frame %s of %d, want hit of %d", i, got, m, n+1)
		}
		la.resume(thread, 5) // step out
		if got, m := la.topOfStack(thread); got != "bottom" || m != n {
			t.Fatalf("round %d, after step out: top frame %s of %d, want bottom of %d", i, got, m, n)
		}
	}
	la.ok("Breakpoints", "remove", []string{"b", "h"})
}

// The agent walks a thread's stack as soon as it stops only when a client
// asked for that thread's stack at its previous stop, and the walk it
// started is the one the client then gets.
func TestLivePrefetchStackOnlyWhenAsked(t *testing.T) {
	la := startLive(t)
	_, thread := la.stoppedAtMain("deep", "5", "loop")
	la.ok("Breakpoints", "add", map[string]any{"ID": "h", "Location": "hit"})
	la.resume(thread, 0) // stop A in hit(): whether it was prefetched depends on main's stop
	base := la.agent.PrefetchedWalks()
	la.resume(thread, 0) // B: nobody asked at A
	if got := la.agent.PrefetchedWalks(); got != base {
		t.Fatalf("%d walks prefetched at a stop after one nobody asked about", got-base)
	}
	top, n := la.topOfStack(thread) // asked at B
	if top != "hit" {
		t.Fatalf("stopped in %s, want hit", top)
	}
	for i := 1; i <= 3; i++ { // C, D, E: each asked
		la.resume(thread, 0)
		if got := la.agent.PrefetchedWalks(); got != base+i {
			t.Fatalf("stop %d after a stack request: %d walks prefetched, want %d", i, got-base, i)
		}
		if got, m := la.topOfStack(thread); got != "hit" || m != n {
			t.Fatalf("prefetched stack: top %s of %d frames, want hit of %d", got, m, n)
		}
	}
	la.resume(thread, 0) // F: prefetched (asked at E), not asked
	la.resume(thread, 0) // G: not prefetched
	if got := la.agent.PrefetchedWalks(); got != base+4 {
		t.Fatalf("%d walks prefetched, want 4", got-base)
	}
	la.ok("Breakpoints", "remove", []string{"h"})
}

// A walk that panics gives its waiters an error, and the agent lives on: the
// next request walks again. The first walk is the prefetched one (its own
// goroutine, where a panic would end the agent), the second the request's.
func TestLiveStackWalkPanic(t *testing.T) {
	la := startLive(t)
	_, thread := la.stoppedAtMain("deep", "3", "loop")
	la.ok("Breakpoints", "add", map[string]any{"ID": "h", "Location": "hit"})
	la.resume(thread, 0)
	la.topOfStack(thread) // asked: the next stop is prefetched
	var panics atomic.Int32
	services.SetBeforeWalk(func() {
		panics.Add(1)
		panic("planted")
	})
	defer services.SetBeforeWalk(nil)
	before := la.agent.PrefetchedWalks()
	la.resume(thread, 0)
	if la.agent.PrefetchedWalks() != before+1 {
		t.Fatalf("the stop was not prefetched")
	}
	var e error
	var ids []string
	for i := 1; i <= 2; i++ {
		if err := la.call("StackTrace", "getChildren", thread).Decode(&e, &ids); err != nil {
			t.Fatal(err)
		}
		if e == nil || !strings.Contains(e.Error(), "planted") {
			t.Fatalf("getChildren %d while walks panic: error %v, %d frames", i, e, len(ids))
		}
	}
	if panics.Load() < 2 {
		t.Fatalf("%d walks panicked, want the prefetched one and at least one more", panics.Load())
	}
	services.SetBeforeWalk(nil)
	if top, n := la.topOfStack(thread); top != "hit" || n < 6 {
		t.Fatalf("after the panics: top %s of %d frames", top, n)
	}
	la.ok("Breakpoints", "remove", []string{"h"})
}

// topOfStack fetches a stopped thread's stack as a client shows it
// (getChildren, then getContext of every frame) and returns the function of
// its top frame and the number of frames.
func (la *liveAgent) topOfStack(thread string) (name string, frames int) {
	la.t.Helper()
	var e error
	var ids []string
	la.decode("StackTrace", "getChildren", []any{thread}, &e, &ids)
	var props []struct{ IP uint64 }
	la.decode("StackTrace", "getContext", []any{ids}, &props, &e)
	if len(props) != len(ids) || len(ids) == 0 {
		la.t.Fatalf("%d frames for %d IDs", len(props), len(ids))
	}
	// getChildren is bottom first: the top frame is last.
	return la.funcAt(thread, props[len(props)-1].IP), len(ids)
}

// TestLiveInlineFrameProps: stopped in twice, inlined into compute, the
// stack shows twice and compute as two frames of one physical frame, with
// the C agent's properties for them: Inlined (the level above the real
// function), FuncID naming each frame's own function, and CodeArea on
// compute's frame at the line of the inlined call. Symbols.findByAddr asked
// in a frame of the chain names that frame's function; asked in the thread,
// the innermost.
func TestLiveInlineFrameProps(t *testing.T) {
	la := startLive(t)
	_, thread := la.stoppedAtMain()
	line := sourceLine(t, "agent_prog.c", "AGENT_TWICE_LINE")
	callLine := sourceLine(t, "agent_prog.c", "AGENT_CALL_LINE")
	la.breakAt(thread, map[string]any{"ID": "line", "File": "agent_prog.c", "Line": line})
	var e error
	ids := la.topFrames(thread, 3)
	type area struct {
		SLine int
		File  string
	}
	var frames []struct {
		IP       uint64
		Inlined  int
		FuncID   string
		CodeArea *area
	}
	la.decode("StackTrace", "getContext", []any{ids}, &frames, &e)
	if len(frames) != 3 {
		t.Fatalf("%d frames", len(frames))
	}
	name := la.symbolName
	top, caller, main := frames[0], frames[1], frames[2]
	if top.Inlined != 1 || name(top.FuncID) != "twice" || top.CodeArea != nil {
		t.Errorf("frame 0 (twice, inlined): Inlined %d, FuncID %q (%s), CodeArea %v", top.Inlined, top.FuncID, name(top.FuncID), top.CodeArea)
	}
	if caller.Inlined != 0 || name(caller.FuncID) != "compute" || caller.CodeArea == nil ||
		caller.CodeArea.SLine != callLine || caller.CodeArea.File != "agent_prog.c" || caller.IP != top.IP {
		t.Errorf("frame 1 (compute, holding the inlined call at line %d): %+v, FuncID names %q", callLine, caller, name(caller.FuncID))
	}
	if main.FuncID != "" || main.CodeArea != nil || main.Inlined != 0 {
		t.Errorf("frame 2 (main, no inlining): %+v", main)
	}
	var sym string
	la.decode("Symbols", "findByAddr", []any{ids[1], caller.IP}, &e, &sym)
	if got := name(sym); got != "compute" {
		t.Errorf("findByAddr in compute's frame: %q", got)
	}
	la.decode("Symbols", "findByAddr", []any{ids[0], top.IP}, &e, &sym)
	if got := name(sym); got != "twice" {
		t.Errorf("findByAddr in twice's frame: %q", got)
	}
	la.decode("Symbols", "findByAddr", []any{thread, top.IP}, &e, &sym)
	if got := name(sym); got != "twice" {
		t.Errorf("findByAddr in the thread: %q, want the innermost function", got)
	}
}

// TestLiveSignalFrameProps: in a signal handler, the frames whose pc is not
// a return address — the kernel's signal trampoline and the frame the
// signal interrupted — carry FuncID (and CodeArea where there is a line),
// naming what is at the pc itself, where a client would look at pc-1.
func TestLiveSignalFrameProps(t *testing.T) {
	la := startLive(t)
	_, thread := la.stoppedAtMain("signal")
	la.ok("Breakpoints", "add", map[string]any{"ID": "h", "Location": "on_usr1"})
	if _, reason, _ := la.resume(thread, 0); reason == "Signal 10" {
		la.resume(thread, 0) // the signal's stop, then the handler
	}
	var e error
	ids := la.topFrames(thread, 3)
	var frames []struct {
		IP       uint64
		FuncID   string
		CodeArea *struct{ SLine int }
	}
	la.decode("StackTrace", "getContext", []any{ids}, &frames, &e)
	if len(frames) != 3 {
		t.Fatalf("%d frames", len(frames))
	}
	name := la.symbolName
	if got := la.funcAt(thread, frames[0].IP); got != "on_usr1" || frames[0].FuncID != "" {
		t.Errorf("frame 0 in %q, FuncID %q", got, frames[0].FuncID)
	}
	if got := name(frames[1].FuncID); got != "__restore_rt" {
		t.Errorf("frame 1 (the signal trampoline): FuncID names %q", got)
	}
	// The interrupted frame: at its exact pc, not pc-1.
	var sym string
	la.decode("Symbols", "findByAddr", []any{thread, frames[2].IP}, &e, &sym)
	if frames[2].FuncID == "" || name(frames[2].FuncID) != name(sym) {
		t.Errorf("frame 2 (interrupted): FuncID %q names %q, the function at its pc is %q", frames[2].FuncID, name(frames[2].FuncID), name(sym))
	}
	if _, line := la.lineAt(thread, frames[2].IP); line > 0 && (frames[2].CodeArea == nil || frames[2].CodeArea.SLine != line) {
		t.Errorf("frame 2 (interrupted): CodeArea %v, the line at its pc is %d", frames[2].CodeArea, line)
	}
}
