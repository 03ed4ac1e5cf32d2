package target

import "sync"

// eventQueue delivers events to listeners one at a time, in order, on its own
// goroutine, so that a backend reporting an event never waits for a listener and
// a listener may call back into the Target.
type eventQueue struct {
	mu        sync.Mutex
	cond      *sync.Cond
	queue     []Event
	listeners []*Listener
	stopping  bool
	done      chan struct{}
}

func (q *eventQueue) start() {
	q.cond = sync.NewCond(&q.mu)
	q.done = make(chan struct{})
	go q.run()
}

func (q *eventQueue) add(l Listener) func() {
	p := &l
	q.mu.Lock()
	q.listeners = append(append([]*Listener(nil), q.listeners...), p)
	q.mu.Unlock()
	return func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if i := indexOf(q.listeners, p); i >= 0 {
			q.listeners = append(append([]*Listener(nil), q.listeners[:i]...), q.listeners[i+1:]...)
		}
	}
}

func (q *eventQueue) push(e Event) {
	q.mu.Lock()
	if !q.stopping {
		q.queue = append(q.queue, e)
		q.cond.Signal()
	}
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
			(*l)(e)
		}
	}
}
