package services

import (
	"sync"

	"github.com/sondedbg/sonde/target"
)

// This file is the hot path of a breakpoint hit: a thread's stop and start
// reach the clients from the goroutine that saw them (for a live target, the
// tracer thread, right after the kernel reported the stop), not after a hop
// to the target's listener goroutine and another to each channel's writer.
// On a two-core machine those hops cost more than everything else a hit takes.
//
// onEventNow, a synchronous target listener, sends the protocol events of
// what it can handle without waiting for anything: stops and starts of
// threads whose launch bookkeeping is settled. Everything else it leaves to
// onEvent, the ordinary listener, which sees every event in the same order
// and does the rest of the work (bookkeeping that may call into the target).
// Once one event was left to onEvent, the ones after it are too until onEvent
// has sent it: clients see events in the order the target changed.

// fastEvents records which events onEventNow sent.
type fastEvents struct {
	mu sync.Mutex
	// sent holds the events whose protocol events onEventNow sent.
	sent map[uint64]bool
	// left holds the events onEventNow left to onEvent that onEvent has
	// not sent yet.
	left map[uint64]bool
}

// onEventNow is the synchronous listener (see target.AddSyncListener). It
// returns true when onEvent has nothing urgent left to do for e.
func (a *Agent) onEventNow(e target.Event) bool {
	f := &a.fast
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sent == nil {
		f.sent, f.left = map[uint64]bool{}, map[uint64]bool{}
	}
	// A stop at a Temporary breakpoint is not sent from here: onEvent
	// removes the breakpoint (and its probe) first, which this thread — the
	// tracer's — cannot wait for.
	if len(f.left) == 0 && !a.bps.mayHaveSpent(e.Reason) && a.sendNow(e) {
		f.sent[e.Seq] = true
		return true
	}
	f.left[e.Seq] = true
	return false
}

// sentEarly reports whether onEventNow sent e's protocol events; onEvent asks
// once per event.
func (a *Agent) sentEarly(e target.Event) bool {
	f := &a.fast
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sent[e.Seq] {
		delete(f.sent, e.Seq)
		return true
	}
	return false
}

// sentLate tells onEventNow that onEvent has sent e's protocol events.
func (a *Agent) sentLate(e target.Event) {
	f := &a.fast
	f.mu.Lock()
	delete(f.left, e.Seq)
	f.mu.Unlock()
}

// sendNow sends the protocol events of a thread's stop or start if that
// needs no lock another goroutine may hold while it calls into the target.
func (a *Agent) sendNow(e target.Event) bool {
	c := e.Context
	if c.IsProcess() || (e.Kind != target.EventStopped && e.Kind != target.EventStarted) {
		return false
	}
	if !a.entrySettled(c) {
		return false
	}
	a.stacks.forget(c)
	if e.Kind == target.EventStarted {
		// Behind: the resume's reply or the next stop follows soon and
		// carries it, so the client wakes once, not once more while the
		// thread it resumed competes with it for a CPU.
		a.emitBehind("RunControl", "contextResumed", string(c.ID()))
		return true
	}
	a.emitSuspended(e, false, false)
	return true
}

// entrySettled reports whether thread's stops and starts are shown as they
// come: no launch is deciding whether its entry stop is hidden. launchMu is
// held across launches, which wait for the tracer thread: only TryLock.
func (a *Agent) entrySettled(thread *target.Context) bool {
	if thread.TID() != thread.PID() {
		return true
	}
	if !a.launches.mu.TryLock() {
		return false
	}
	defer a.launches.mu.Unlock()
	return a.launches.hideEntry[thread.PID()] == 0 && !a.launches.entryStop[thread.PID()]
}
