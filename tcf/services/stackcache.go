package services

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/unwind"
)

// A thread's stack is unwound once per stop and cached until it runs again,
// together with the encoded answers the StackTrace commands give about it: a
// client shows a stack by asking for every frame at every stop, so each stop
// computes them once. The stack cache owns that table; the StackTrace,
// Symbols, LineNumbers and Expressions services ask it for stacks (stop),
// and the agent's event handlers tell it when a thread stopped (prefetch)
// or ran (forget).

// stackCache holds the stacks of the stopped threads.
type stackCache struct {
	// backtrace unwinds a stopped thread (session.Backtrace).
	backtrace func(*target.Context) (unwind.Trace, error)
	log       *slog.Logger

	mu    sync.Mutex
	stops map[*target.Context]*threadStop
	// walks are the unwinds in progress; a request for a stack being
	// walked waits for that walk instead of starting another.
	walks map[*target.Context]*stackWalk
	// gen counts each thread's runs (forget): a walk is kept only if the
	// thread did not run while it was being made.
	gen map[*target.Context]uint64
	// asked holds the threads whose stack a client asked for during their
	// current or last stop: their next stop is walked at once (prefetch).
	asked map[*target.Context]bool
	// prefetched counts the walks prefetch started.
	prefetched int
	// ids holds each thread's frame IDs ("FP<n>.<thread>"), the same at
	// every stop: made once, not 57 strings per stop of a deep stack.
	ids map[*target.Context][]string
	// prev holds each thread's last stop while it runs: the next stop's
	// frames that are the same keep their encoded answers.
	prev map[*target.Context]*threadStop
}

// newStackCache makes the stack cache of the threads of sess's target.
func newStackCache(sess *session.Session, log *slog.Logger) *stackCache {
	return &stackCache{
		backtrace: func(thread *target.Context) (unwind.Trace, error) {
			return sess.Backtrace(thread, session.StackOptions{})
		},
		log:   log,
		stops: map[*target.Context]*threadStop{},
		walks: map[*target.Context]*stackWalk{},
		gen:   map[*target.Context]uint64{},
		asked: map[*target.Context]bool{},
		ids:   map[*target.Context][]string{},
		prev:  map[*target.Context]*threadStop{},
	}
}

// frameIDs returns thread's first n frame IDs.
func (sc *stackCache) frameIDs(thread *target.Context, n int) []string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	ids := sc.ids[thread]
	for i := len(ids); i < n; i++ {
		ids = append(ids, frameID(i, thread))
	}
	sc.ids[thread] = ids
	return ids[:n:n]
}

// threadStop is what one stop of a thread made the agent compute about its
// stack. It does not change once built.
type threadStop struct {
	trace *unwind.Trace
	// children is getChildren's list of frame IDs (bottom first), encoded.
	children []byte
	// frames[n] is frame n's getContext object, encoded.
	frames [][]byte
}

// stackWalk is one unwind in progress; done is closed when st or err is set.
type stackWalk struct {
	done chan struct{}
	st   *threadStop
	err  error
}

// stack returns the stack of a stopped thread, unwinding it on first use.
func (sc *stackCache) stack(thread *target.Context) (*unwind.Trace, error) {
	st, err := sc.stop(thread)
	if err != nil {
		return nil, err
	}
	return st.trace, nil
}

// stop returns what this stop of a stopped thread computed, unwinding the
// stack and encoding its frames on first use (or waiting for the walk in
// progress).
func (sc *stackCache) stop(thread *target.Context) (*threadStop, error) {
	if state, _, _ := thread.State(); state == target.StateRunning {
		return nil, target.Errorf(target.CodeIsRunning, "stack trace", thread.ID(), nil)
	}
	sc.mu.Lock()
	sc.asked[thread] = true
	if st := sc.stops[thread]; st != nil {
		sc.mu.Unlock()
		return st, nil
	}
	w := sc.walks[thread]
	if w == nil {
		w = sc.startWalkLocked(thread)
		gen := sc.gen[thread]
		sc.mu.Unlock()
		sc.walk(thread, w, gen)
	} else {
		sc.mu.Unlock()
	}
	<-w.done
	return w.st, w.err
}

// frameJSON returns the encoded getContext object of frame n of a
// stopped thread; id is the frame's ID, for the error.
func (sc *stackCache) frameJSON(thread *target.Context, n int, id string) ([]byte, error) {
	st, err := sc.stop(thread)
	if err != nil {
		return nil, err
	}
	if n >= len(st.frames) {
		return nil, tcf.Errorf(tcf.CodeInvalidContext, "no stack frame %q", id)
	}
	return st.frames[n], nil
}

// prefetch starts walking the stack of a thread that just stopped, if a
// client asked for its stack at its previous stop: a debugger that shows
// the stack shows it at every stop, and the walk then runs while the stop's
// event travels to the client and its first request comes back (for a
// 57-frame stack, the first request after a stop got its reply in ~165 µs
// instead of ~40 when the stack is ready). A client that only resumes
// (a breakpoint loop driven from outside) costs nothing.
func (sc *stackCache) prefetch(thread *target.Context) {
	sc.mu.Lock()
	if !sc.asked[thread] || sc.stops[thread] != nil || sc.walks[thread] != nil {
		sc.mu.Unlock()
		return
	}
	delete(sc.asked, thread) // until a client asks during this stop
	sc.prefetched++
	w := sc.startWalkLocked(thread)
	gen := sc.gen[thread]
	sc.mu.Unlock()
	// Not on the caller's goroutine: that may be the tracer thread (a
	// synchronous listener), and the walk takes locks that goroutines
	// waiting for the tracer thread may hold.
	go sc.walk(thread, w, gen)
}

// startWalkLocked registers a walk of thread's stack (sc.mu held).
func (sc *stackCache) startWalkLocked(thread *target.Context) *stackWalk {
	w := &stackWalk{done: make(chan struct{})}
	sc.walks[thread] = w
	return w
}

// walk unwinds thread's stack for w; the result is cached unless the thread
// ran meanwhile (its generation changed).
//
// A walk that panics (a bug meeting a stack it does not expect) fails with
// an error instead: on a goroutine of its own the panic would end the agent
// with its breakpoints still planted in the programs, and everyone waiting
// for this walk would otherwise wait for good.
func (sc *stackCache) walk(thread *target.Context, w *stackWalk, gen uint64) {
	defer func() {
		if p := recover(); p != nil {
			sc.log.Error("stack walk panicked", "thread", thread.ID(), "panic", p)
			w.st, w.err = nil, fmt.Errorf("internal error walking the stack of %s: %v", thread.ID(), p)
		}
		sc.mu.Lock()
		if sc.walks[thread] == w {
			delete(sc.walks, thread)
		}
		if w.err == nil && sc.gen[thread] == gen && !thread.Exited() {
			sc.stops[thread] = w.st
		}
		sc.mu.Unlock()
		close(w.done)
	}()
	if f := beforeWalk.Load(); f != nil {
		(*f)()
	}
	t, err := sc.backtrace(thread)
	if err != nil {
		w.err = err
		return
	}
	sc.mu.Lock()
	prev := sc.prev[thread]
	sc.mu.Unlock()
	w.st = newThreadStop(stackOwner{string(thread.ID()), string(thread.Process().ID())}, &t, sc.frameIDs(thread, len(t.Frames)), prev)
}

// beforeWalk, when set (by tests only), runs at the start of every walk.
var beforeWalk atomic.Pointer[func()]

// forget drops a thread's cached stop when it runs, stops or exits; a walk
// in progress then finishes for those waiting on it but is not kept.
func (sc *stackCache) forget(thread *target.Context) {
	sc.mu.Lock()
	if st := sc.stops[thread]; st != nil {
		sc.prev[thread] = st
	}
	delete(sc.stops, thread)
	delete(sc.walks, thread)
	if s, _, _ := thread.State(); s == target.StateExited || s == target.StateExiting {
		delete(sc.gen, thread)
		delete(sc.asked, thread)
		delete(sc.ids, thread)
		delete(sc.prev, thread)
	} else {
		sc.gen[thread]++
	}
	sc.mu.Unlock()
}
