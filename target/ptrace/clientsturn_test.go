package ptrace

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
)

// spinningBackend is a backend whose tracer thread would spin after its
// last work (a status, whose next work came quickly the last times), with
// no tracee behind it: spin runs on the test's goroutine.
func spinningBackend() *Backend {
	b := &Backend{
		reqs:    make(chan *request),
		reaper:  newReaper(),
		threads: map[int]*thread{1: nil}, // spin only runs with tracees
		orphans: map[int][]unix.WaitStatus{},
		spinner: newSpinPolicy(),
	}
	b.spinner.lastKind = workStatus
	return b
}

// After a stop that is the client's turn, the tracer thread does not spin:
// a status that comes is left for the loop's sleeping wait (the reaper
// notifies it), not polled for.
func TestNoSpinOnClientsTurn(t *testing.T) {
	b := spinningBackend()
	if !b.spinner.worthSpinning() {
		t.Fatal("the policy does not spin after a status to begin with")
	}
	b.ClientsTurn()
	const unknownTid = 1 << 30
	b.reaper.mu.Lock()
	b.reaper.push(waitEvent{tid: unknownTid, status: 0})
	b.reaper.mu.Unlock()

	b.spin()

	if n := len(b.reaper.take()); n != 1 {
		t.Fatalf("the spin took %d status(es) on the client's turn, want it to leave the one there", 1-n)
	}
}

// The client's turn told while the tracer thread spins ends the spin: a
// request queued after the one that told it is left for the loop.
func TestClientsTurnEndsTheSpin(t *testing.T) {
	b := spinningBackend()
	b.reqs = make(chan *request, 1) // the second waits there, ready at once
	ran := make(chan string, 2)
	second := &request{fn: func() { ran <- "second" }, done: make(chan struct{})}
	first := &request{fn: func() {
		ran <- "first"
		b.ClientsTurn()
		b.reqs <- second // a spin that went on would take it at once
	}, done: make(chan struct{})}
	b.reqs <- first

	b.spin()

	if got := <-ran; got != "first" {
		t.Fatalf("ran %s first", got)
	}
	select {
	case got := <-ran:
		t.Fatalf("the spin ran the %s request after the client's turn was told", got)
	default:
	}
	select {
	case r := <-b.reqs: // the loop's to take
		b.finish(r)
	default:
		t.Fatal("the second request is gone")
	}
	if got := <-ran; got != "second" {
		t.Fatalf("ran %s", got)
	}
}

// A request ends the client's turn: the step's requests, its legs and the
// traps after a continue are waited for awake again.
func TestRequestEndsClientsTurn(t *testing.T) {
	path := build(t, "tp_hotloop.c")
	tg, r := newTarget(t)
	p := launch(t, tg, path)
	i := 0
	r.wait(t, &i, "entry stop", isStop(p))
	if _, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: symbol(t, p, path, "tick")}); err != nil {
		t.Fatal(err)
	}
	th := mainThread(t, p)
	b := tg.Backend().(*Backend)
	tg.ClientsTurn()
	if !b.clientHasTurn() {
		t.Fatal("ClientsTurn did not reach the backend")
	}
	if _, err := b.Registers(th); err != nil {
		t.Fatal(err)
	}
	if b.clientHasTurn() {
		t.Fatal("still the client's turn after a request to the tracer thread")
	}
	for hit := 0; hit < 2; hit++ {
		tg.ClientsTurn()
		if !b.clientHasTurn() {
			t.Fatal("ClientsTurn did not reach the backend")
		}
		if err := th.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
			t.Fatal(err)
		}
		if b.clientHasTurn() {
			t.Fatal("still the client's turn after a resume")
		}
		if e := r.wait(t, &i, "breakpoint hit", isStop(p)); e.Reason == nil || e.Reason.Kind != target.ReasonBreakpoint {
			t.Fatalf("hit %d: stopped for %s", hit, describe(e))
		}
	}
}
