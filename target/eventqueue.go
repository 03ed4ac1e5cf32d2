package target

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// lazyDelay bounds how long ordinary listeners wait for an event that the
// synchronous listeners handled (see AddSyncListener); lazyMax bounds how
// many such events may wait.
const (
	lazyDelay = time.Millisecond
	lazyMax   = 256
)

// eventQueue delivers events to listeners one at a time, in order, on its own
// goroutine, so that a backend reporting an event never waits for a listener and
// a listener may call back into the Target. Synchronous listeners see each
// event first, on the reporting goroutine.
type eventQueue struct {
	mu        sync.Mutex
	cond      *sync.Cond
	queue     []Event
	listeners []*Listener
	sync      []*SyncListener
	seq       uint64
	stopping  bool
	done      chan struct{}
	// lazy is the timer that wakes run for events queued without a signal;
	// lazyArmed says it is running.
	lazy      *time.Timer
	lazyArmed bool
}

func (q *eventQueue) start() {
	q.cond = sync.NewCond(&q.mu)
	q.done = make(chan struct{})
	go q.run()
}

func (q *eventQueue) add(l Listener) func() { return subscribe(q, &q.listeners, l) }

func (q *eventQueue) addSync(l SyncListener) func() { return subscribe(q, &q.sync, l) }

// subscribe adds l to the list *to. Lists are copied on change, so that a
// delivery in progress keeps the list it started with.
func subscribe[L any](q *eventQueue, to *[]*L, l L) func() {
	p := &l
	q.mu.Lock()
	*to = append(append([]*L(nil), *to...), p)
	q.mu.Unlock()
	return func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if i := indexOf(*to, p); i >= 0 {
			*to = append(append([]*L(nil), (*to)[:i]...), (*to)[i+1:]...)
		}
	}
}

func (q *eventQueue) push(e Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopping {
		return
	}
	q.seq++
	e.Seq = q.seq
	// Under mu: synchronous listeners see events in order, and before the
	// queue's goroutine can hand the same event to the others.
	urgent := len(q.sync) == 0
	for _, l := range q.sync {
		if !deliverSync(*l, e) {
			urgent = true
		}
	}
	q.queue = append(q.queue, e)
	if urgent || len(q.queue) >= lazyMax {
		q.cond.Signal()
		return
	}
	if !q.lazyArmed {
		q.lazyArmed = true
		if q.lazy == nil {
			q.lazy = time.AfterFunc(lazyDelay, q.wakeLazy)
		} else {
			q.lazy.Reset(lazyDelay)
		}
	}
}

// wakeLazy is the lazy timer's: run takes what push queued without a signal.
func (q *eventQueue) wakeLazy() {
	q.mu.Lock()
	q.lazyArmed = false
	q.cond.Signal()
	q.mu.Unlock()
}

// stop delivers what is queued, then ends the goroutine.
func (q *eventQueue) stop() {
	q.mu.Lock()
	q.stopping = true
	q.cond.Signal()
	q.mu.Unlock()
	<-q.done
}

func (q *eventQueue) run() {
	defer close(q.done)
	for {
		q.mu.Lock()
		for len(q.queue) == 0 && !q.stopping {
			q.cond.Wait()
		}
		if len(q.queue) == 0 {
			q.mu.Unlock()
			return
		}
		e := q.queue[0]
		q.queue[0] = Event{}
		q.queue = q.queue[1:]
		ls := q.listeners
		q.mu.Unlock()
		for _, l := range ls {
			deliver(*l, e)
		}
	}
}

// deliver and deliverSync hand e to a listener, and a listener's panic to
// stderr. A listener runs on the event queue's goroutine or on the backend's
// own thread, where a panic would end the process with every breakpoint
// still planted and every tracee stopped where it is; the other listeners
// and the target are better served by the next event.
func deliver(l Listener, e Event) {
	defer recoverListener(e)
	l(e)
}

func deliverSync(l SyncListener, e Event) (handled bool) {
	defer recoverListener(e)
	return l(e)
}

func recoverListener(e Event) {
	if p := recover(); p != nil {
		fmt.Fprintf(os.Stderr, "sonde: internal error in a listener of %s events: %v\n", e.Kind, p)
	}
}
