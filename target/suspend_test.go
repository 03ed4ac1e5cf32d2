package target

import (
	"testing"
	"time"
)

// suspendBackend stops, as ptrace's does, only the threads of a process it
// finds running; a thread stopped already (for a step's leg too) is left as
// it is.
type suspendBackend struct {
	nullBackend
	t *Target
}

func (b suspendBackend) Suspend(c *Context) error {
	threads := []*Context{c}
	if c.IsProcess() {
		threads = c.Children()
	}
	for _, th := range threads {
		if s, _, _ := th.State(); s == StateRunning {
			b.t.Stopped(th, &SuspendReason{Kind: ReasonUser}, 0x2000)
		}
	}
	return nil
}

// TestSuspendProcessWaitsForQuietStop: a process is suspended while one of
// its threads is stopped quietly between the legs of a line step. The step
// then lets the thread run on; the process's suspend must have waited for
// that and stopped the thread after it, not left it running in a process
// reported suspended.
func TestSuspendProcessWaitsForQuietStop(t *testing.T) {
	tg := New(nullBackend{})
	tg.backend = suspendBackend{t: tg}
	p := tg.AddProcess(10, nil, "prog")
	th := tg.AddThread(p, 11, nil, "main")
	tg.Started(th)
	th.stopQuietly(&SuspendReason{Kind: ReasonStep}, 0x1000) // a step's leg ended
	done := make(chan error, 1)
	go func() { done <- p.Suspend() }()
	time.Sleep(20 * time.Millisecond) // (only gives the suspend a chance to come first)
	th.setRunning()                   // the step's next leg
	if err := <-done; err != nil {
		t.Fatalf("Suspend: %v", err)
	}
	if s, r, _ := th.State(); s != StateStopped || r.Kind != ReasonUser {
		t.Fatalf("thread %s (%v) after the process's suspend, want stopped by it", s, r)
	}
}

// TestSuspendThreadWaitsForQuietStop: the same for one thread, which a
// client sees running: no "already stopped".
func TestSuspendThreadWaitsForQuietStop(t *testing.T) {
	tg := New(nullBackend{})
	tg.backend = suspendBackend{t: tg}
	p := tg.AddProcess(10, nil, "prog")
	th := tg.AddThread(p, 11, nil, "main")
	tg.Started(th)
	th.stopQuietly(&SuspendReason{Kind: ReasonStep}, 0x1000)
	done := make(chan error, 1)
	go func() { done <- th.Suspend() }()
	time.Sleep(20 * time.Millisecond)
	th.setRunning()
	if err := <-done; err != nil {
		t.Fatalf("Suspend: %v", err)
	}
	if s, r, _ := th.State(); s != StateStopped || r.Kind != ReasonUser {
		t.Fatalf("thread %s (%v) after its suspend, want stopped by it", s, r)
	}
}
