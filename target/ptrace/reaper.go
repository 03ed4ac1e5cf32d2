package ptrace

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// waitEvent is one consumed wait status of a tracee.
type waitEvent struct {
	tid    int
	status unix.WaitStatus
}

// reaper collects wait statuses of tracees on a goroutine of its own, so that the
// tracer thread can sleep in a channel receive and still wake for requests.
//
// It never reaps a child that is not a tracee: it first looks with
// waitid(P_ALL, WNOWAIT), which leaves the status in place, and consumes it with
// wait4(tid, WNOHANG) only when the tid is known to be traced by sonde (or its
// /proc status names the tracer thread: a new clone child whose parent's event
// has not been handled yet). Children of the same Go process started with
// os/exec are left for their own Wait.
//
// mu is held while a status is consumed and queued; the tracer thread holds it
// while it waits for one particular thread inside an operation, so a status is
// always in exactly one place: the kernel, the backlog, or the tracer's hands.
type reaper struct {
	mu        sync.Mutex
	cond      *sync.Cond
	known     map[int]bool // tids traced by sonde, and launched children to reap
	groups    map[int]bool // pids of the processes sonde traces: their threads are ours
	backlog   []waitEvent
	notify    chan struct{}
	tracerTid int
	closed    bool
	// tracerAwake is set while the tracer thread polls for statuses itself;
	// the reaper then stays out of the way instead of waking for every stop.
	tracerAwake bool
}

// setTracerAwake tells the reaper whether the tracer thread is polling itself.
func (r *reaper) setTracerAwake(awake bool) {
	r.mu.Lock()
	r.tracerAwake = awake
	if !awake {
		r.cond.Broadcast()
	}
	r.mu.Unlock()
}

func newReaper() *reaper {
	r := &reaper{known: map[int]bool{}, groups: map[int]bool{}, notify: make(chan struct{}, 1)}
	r.cond = sync.NewCond(&r.mu)
	return r
}

func (r *reaper) add(tid int) {
	r.mu.Lock()
	r.known[tid] = true
	r.cond.Broadcast()
	r.mu.Unlock()
}

// setGroup records whether pid is a process sonde traces.
func (r *reaper) setGroup(pid int, traced bool) {
	r.mu.Lock()
	if traced {
		r.groups[pid] = true
	} else {
		delete(r.groups, pid)
	}
	r.mu.Unlock()
}

func (r *reaper) remove(tid int) {
	r.mu.Lock()
	delete(r.known, tid)
	r.mu.Unlock()
}

func (r *reaper) close() {
	r.mu.Lock()
	r.closed = true
	r.cond.Broadcast()
	r.mu.Unlock()
}

// take returns and clears the backlog.
func (r *reaper) take() []waitEvent {
	r.mu.Lock()
	b := r.backlog
	r.backlog = nil
	r.mu.Unlock()
	return b
}

func (r *reaper) push(ev waitEvent) {
	r.backlog = append(r.backlog, ev)
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// ours reports whether pid's status may be consumed. Called with mu held.
func (r *reaper) ours(pid int) bool {
	if r.known[pid] {
		return true
	}
	st, err := readStatus(pid)
	return err == nil && ((st.TracerPid == r.tracerTid && r.tracerTid != 0) || r.groups[st.Tgid])
}

func (r *reaper) run() {
	backoff := time.Duration(0)
	for {
		r.mu.Lock()
		for (len(r.known) == 0 || r.tracerAwake) && !r.closed {
			r.cond.Wait()
		}
		if len(r.known) == 0 {
			// Closed, and no launched child is left to reap.
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		if backoff > 0 {
			// A child that is not ours is waitable: waitid would return it
			// again at once. Poll the known tracees instead until it is gone.
			time.Sleep(backoff)
			r.pollKnown()
			backoff = min(backoff*2, 10*time.Millisecond)
		}
		pid, err := waitAnyNoWait(0)
		if err != nil {
			// ECHILD: no children at the moment (a tracee just went away).
			time.Sleep(time.Millisecond)
			continue
		}
		r.mu.Lock()
		if r.ours(pid) {
			backoff = 0
			if wpid, ws, err := wait4(pid, unix.WNOHANG); err == nil && wpid == pid {
				r.push(waitEvent{pid, ws})
			}
		} else if backoff == 0 {
			backoff = 100 * time.Microsecond
		}
		r.mu.Unlock()
	}
}

func (r *reaper) pollKnown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for tid := range r.known {
		if wpid, ws, err := wait4(tid, unix.WNOHANG); err == nil && wpid == tid {
			r.push(waitEvent{tid, ws})
		}
	}
}

// poll consumes one waiting tracee status without blocking, for the tracer
// thread while it spins. It reports whether it found one.
func (r *reaper) poll() bool {
	pid, err := waitAnyNoWait(unix.WNOHANG)
	if err != nil || pid <= 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ours(pid) {
		return false
	}
	wpid, ws, err := wait4(pid, unix.WNOHANG)
	if err != nil || wpid != pid {
		return false
	}
	r.backlog = append(r.backlog, waitEvent{pid, ws})
	return true
}
