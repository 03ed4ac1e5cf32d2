package ptrace

import (
	"testing"

	"golang.org/x/sys/unix"
)

// A status the reaper consumed while the tracer thread spins (the reaper was
// already waiting in the kernel when the spin began) is handled by the spin,
// not left in the backlog until the spin's budget runs out: that left stops
// reported ~250 µs late.
func TestSpinHandlesStatusesFromTheReaper(t *testing.T) {
	b := &Backend{
		reqs:    make(chan *request),
		reaper:  newReaper(),
		threads: map[int]*thread{1: nil}, // spin only runs with tracees
		orphans: map[int][]unix.WaitStatus{},
		spinner: newSpinPolicy(),
	}
	// After a resume the tracer spins (its stop came quickly before); after
	// a stop it does not (the client answered late the last times).
	b.spinner.lastKind = workRequest
	b.spinner.short[workStatus] = 0
	// An exit status of a tid sonde does not know: handling it changes
	// nothing, so only where it went is seen.
	const unknownTid = 1 << 30
	b.reaper.mu.Lock()
	b.reaper.push(waitEvent{tid: unknownTid, status: 0})
	b.reaper.mu.Unlock()

	b.spin()

	if n := len(b.reaper.take()); n != 0 {
		t.Fatalf("%d status(es) still in the backlog after the spin", n)
	}
	if b.spinner.lastKind != workStatus {
		t.Fatalf("last work %d after the spin handled a status", b.spinner.lastKind)
	}
}
