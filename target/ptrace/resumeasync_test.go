package ptrace

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sondedbg/sonde/target"
)

// outcome collects the results a ResumeAsync caller hears, with the thread
// each came on.
type outcome struct {
	mu   sync.Mutex
	errs []error
	read int // how many next returned
	got  chan struct{}
}

func newOutcome() *outcome { return &outcome{got: make(chan struct{}, 16)} }

func (o *outcome) done(err error) {
	o.mu.Lock()
	o.errs = append(o.errs, err)
	o.mu.Unlock()
	o.got <- struct{}{}
}

// next waits for the next result, in the order they came.
func (o *outcome) next(t *testing.T, what string) error {
	t.Helper()
	select {
	case <-o.got:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: ResumeAsync never reported", what)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.read++
	return o.errs[o.read-1]
}

// none checks that nothing more was reported (a second report would be a bug).
func (o *outcome) none(t *testing.T, what string) {
	t.Helper()
	select {
	case <-o.got:
		t.Fatalf("%s: ResumeAsync reported twice", what)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestResumeAsync: an asynchronous resume runs the thread to its next
// breakpoint hit and reports success once; one of a running thread, of an
// unknown mode each report their error once; and after Close the caller
// still hears back.
func TestResumeAsync(t *testing.T) {
	path := build(t, "tp_hotloop.c")
	tg, r := newTarget(t)
	p := launch(t, tg, path)
	i := 0
	r.wait(t, &i, "entry stop", isStop(p))
	th := mainThread(t, p)
	bp, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: symbol(t, p, path, "tick")})
	if err != nil {
		t.Fatal(err)
	}

	o := newOutcome()
	for hit := 0; hit < 3; hit++ {
		th.ResumeAsync(target.ResumeContinue, target.ResumeOptions{}, o.done)
		if err := o.next(t, "resume"); err != nil {
			t.Fatalf("resume %d: %v", hit, err)
		}
		e := r.wait(t, &i, "breakpoint hit", isStop(p))
		if e.Reason == nil || e.Reason.Kind != target.ReasonBreakpoint {
			t.Fatalf("hit %d: stopped for %s", hit, describe(e))
		}
	}
	o.none(t, "after three hits")

	// Two resumes in a row of a thread that will not stop again: the
	// second finds it running (in the model or on the tracer thread).
	if err := tg.RemoveBreakpoint(bp); err != nil {
		t.Fatal(err)
	}
	th.ResumeAsync(target.ResumeContinue, target.ResumeOptions{}, o.done)
	th.ResumeAsync(target.ResumeContinue, target.ResumeOptions{}, o.done)
	if err := o.next(t, "first of two"); err != nil {
		t.Fatalf("first of two resumes: %v", err)
	}
	if err := o.next(t, "second of two"); !isCode(err, target.CodeAlreadyRunning) {
		t.Fatalf("resume of a running thread: %v, want AlreadyRunning", err)
	}
	if err := th.Suspend(); err != nil {
		t.Fatal(err)
	}
	r.wait(t, &i, "suspended", isStop(p))

	// A mode nobody implements: refused before the tracer sees it.
	th.ResumeAsync(target.ResumeMode(63), target.ResumeOptions{}, o.done)
	if err := o.next(t, "unknown mode"); !isCode(err, target.CodeUnsupported) {
		t.Fatalf("unknown mode: %v, want Unsupported", err)
	}

	// Close with the thread stopped: a resume after Close reports at once.
	tg.Close()
	th.ResumeAsync(target.ResumeContinue, target.ResumeOptions{}, o.done)
	if err := o.next(t, "after Close"); err == nil {
		t.Fatal("resume after Close succeeded")
	}
	o.none(t, "after Close")
}

// TestPostAfterTracerEnded: a request posted to a backend whose tracer
// thread has ended is cancelled, reported once, on the caller's goroutine.
func TestPostAfterTracerEnded(t *testing.T) {
	tg, err := New()
	if err != nil {
		t.Fatal(err)
	}
	b := tg.Backend().(*Backend)
	tg.Close()
	<-b.done
	o := newOutcome()
	ran := false
	b.post("test", func() error { ran = true; return nil }, o.done)
	if err := o.next(t, "post after the end"); err == nil || ran {
		t.Fatalf("post after the tracer ended: ran=%v err=%v", ran, err)
	}
	o.none(t, "post after the end")

	// And a request left in the queue when the tracer thread ends is
	// cancelled by it (cancelPosted), never run.
	req := &request{fn: func() { ran = true }, cancel: func() { o.done(errors.New("cancelled")) }}
	b.reqs <- req
	b.cancelPosted()
	if err := o.next(t, "queued at the end"); err == nil || ran {
		t.Fatalf("queued request at the end: ran=%v err=%v", ran, err)
	}
}

func isCode(err error, code target.Code) bool {
	var te *target.Error
	return errors.As(err, &te) && te.Code == code
}
