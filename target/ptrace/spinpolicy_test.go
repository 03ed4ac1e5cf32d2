package ptrace

import (
	"testing"
	"time"
)

// The tracer thread spins after work of a kind only while the work after it
// came within the budget at least once in the last three times.
func TestSpinPolicy(t *testing.T) {
	p := newSpinPolicy()
	now := time.Unix(1000, 0)
	step := func(k workKind, gap time.Duration) {
		now = now.Add(gap)
		p.arrived(k, now)
		now = now.Add(10 * time.Microsecond) // the work itself
		p.finished(now)
	}
	if !p.worthSpinning() {
		t.Fatal("a new policy does not spin")
	}
	// A breakpoint loop: each stop (a status) is answered by a resume (a
	// request) within the budget, and the program traps again soon.
	for range 10 {
		step(workStatus, 50*time.Microsecond)
		if !p.worthSpinning() {
			t.Fatal("no spin after a stop answered quickly")
		}
		step(workRequest, 60*time.Microsecond)
		if !p.worthSpinning() {
			t.Fatal("no spin after a resume followed by a quick stop")
		}
	}
	// A client that fetches the stack at each stop: the resume comes a
	// millisecond after the stop; the stop still comes soon after the resume.
	for i := range 3 {
		step(workStatus, 50*time.Microsecond)
		step(workRequest, time.Millisecond) // records the slow answer to that stop
		if !p.worthSpinning() {
			t.Fatalf("round %d: no spin after a resume", i)
		}
	}
	step(workStatus, 50*time.Microsecond)
	if p.worthSpinning() {
		t.Fatal("spins after a stop that the last three times was answered late")
	}
	// One quick answer is enough to spin after stops again.
	step(workRequest, 100*time.Microsecond)
	step(workStatus, 50*time.Microsecond)
	if !p.worthSpinning() {
		t.Fatal("no spin after a stop answered quickly again")
	}
	// The first work ever has no gap before it to record.
	q := newSpinPolicy()
	q.arrived(workStatus, now)
	if q.short != newSpinPolicy().short {
		t.Fatalf("history %v after the first work", q.short)
	}
}
