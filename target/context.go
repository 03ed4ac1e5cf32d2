package target

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ID identifies a context: "P<pid>" for a process, "P<pid>.<tid>" for a thread.
type ID string

// ProcessID returns the ID of process pid.
func ProcessID(pid int) ID { return ID("P" + strconv.Itoa(pid)) }

// ThreadID returns the ID of thread tid of process pid.
func ThreadID(pid, tid int) ID { return ID(fmt.Sprintf("P%d.%d", pid, tid)) }

// ParseID splits an ID into pid and tid (tid 0 for a process ID).
func ParseID(id ID) (pid, tid int, err error) {
	s := string(id)
	if !strings.HasPrefix(s, "P") {
		return 0, 0, Errorf(CodeInvalidContext, "parse id", id, nil)
	}
	p, t, thread := strings.Cut(s[1:], ".")
	pid, err1 := strconv.Atoi(p)
	if err1 != nil || pid <= 0 {
		return 0, 0, Errorf(CodeInvalidContext, "parse id", id, nil)
	}
	if !thread {
		return pid, 0, nil
	}
	tid, err2 := strconv.Atoi(t)
	if err2 != nil || tid <= 0 {
		return 0, 0, Errorf(CodeInvalidContext, "parse id", id, nil)
	}
	return pid, tid, nil
}

// Kind says what a context is.
type Kind int

const (
	KindProcess Kind = iota // a container that owns a memory space
	KindThread              // has a run state and registers
)

func (k Kind) String() string {
	if k == KindProcess {
		return "process"
	}
	return "thread"
}

// Context is a process or a thread of a Target. Its identity fields never change;
// its state is read through methods that take a snapshot under its lock.
//
// A Context stays valid while someone holds a reference (Hold/Release), even after
// the thread or process exited: operations then fail with ErrAlreadyExited, and
// the Disposed event is sent once the last reference is gone.
type Context struct {
	target  *Target
	id      ID
	kind    Kind
	pid     int
	tid     int // == pid for a process
	parent  *Context
	creator *Context

	refs atomic.Int32
	// mapGen counts a process's MemoryMapChanged reports (MapGeneration).
	mapGen atomic.Uint64

	mu     sync.Mutex
	name   string
	state  RunState
	reason *SuspendReason
	pc     uint64 // PC at the last stop (threads)
	// quiet is open while the thread is stopped for sonde's own work (a line
	// step's leg, eventpoint handlers) with no Stopped event sent; it is
	// closed when the thread runs again or its stop is reported.
	quiet chan struct{}
	// stopRegs are the general registers the backend read at this stop
	// (SetStopRegisters); nil once the thread runs or they are written.
	stopRegs *Registers
	exit     *ExitStatus
	pending  SignalSet // signals queued for delivery on resume
	dontStop SignalSet // process: signals that are passed without stopping
	dontPass SignalSet // process: signals that are swallowed on resume
	// passHandled: process: signals passed without a stop when the
	// process catches or ignores them (dispositions.go)
	passHandled SignalSet
	children    []*Context
	ext         []any
	// inline is how the thread's stop presents inlined calls that begin
	// at its pc (inlineview.go).
	inline inlineView
}

// MapGeneration counts the reports (MemoryMapChanged: exec, a library
// loaded or unloaded) that c's process's mappings changed, counted when
// the change is reported, before any listener hears of it: a list of
// modules read after it returned n is current while it still returns n.
func (c *Context) MapGeneration() uint64 { return c.Process().mapGen.Load() }

func (c *Context) ID() ID             { return c.id }
func (c *Context) Kind() Kind         { return c.kind }
func (c *Context) IsProcess() bool    { return c.kind == KindProcess }
func (c *Context) PID() int           { return c.pid }
func (c *Context) TID() int           { return c.tid }
func (c *Context) Parent() *Context   { return c.parent }
func (c *Context) Creator() *Context  { return c.creator }
func (c *Context) Target() *Target    { return c.target }
func (c *Context) String() string     { return string(c.id) }
func (c *Context) Name() string       { c.mu.Lock(); defer c.mu.Unlock(); return c.name }
func (c *Context) Exit() *ExitStatus  { c.mu.Lock(); defer c.mu.Unlock(); return c.exit }
func (c *Context) Pending() SignalSet { c.mu.Lock(); defer c.mu.Unlock(); return c.pending }
func (c *Context) DontStop() SignalSet {
	c.Process().mu.Lock()
	defer c.Process().mu.Unlock()
	return c.Process().dontStop
}
func (c *Context) DontPass() SignalSet {
	c.Process().mu.Lock()
	defer c.Process().mu.Unlock()
	return c.Process().dontPass
}

// Process returns the process a context belongs to (itself for a process).
func (c *Context) Process() *Context {
	if c.kind == KindProcess {
		return c
	}
	return c.parent
}

// State returns the run state, the suspend reason (nil unless stopped) and the PC
// at the stop.
func (c *Context) State() (RunState, *SuspendReason, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state, c.reason, c.pc
}

// stopQuietly marks a thread stopped at pc for sonde's own work: no event
// is sent, and Suspend waits until the thread runs again or the stop is
// reported.
func (c *Context) stopQuietly(reason *SuspendReason, pc uint64) {
	c.mu.Lock()
	c.state, c.reason, c.pc = StateStopped, reason, pc
	if c.quiet == nil {
		c.quiet = make(chan struct{})
	}
	c.mu.Unlock()
}

// setStopped marks a thread stopped at pc, a stop listeners are told of.
func (c *Context) setStopped(reason *SuspendReason, pc uint64) {
	c.mu.Lock()
	c.state, c.reason, c.pc = StateStopped, reason, pc
	c.endQuietLocked()
	c.mu.Unlock()
}

// setRunning marks a thread running.
func (c *Context) setRunning() {
	c.mu.Lock()
	c.state, c.reason = StateRunning, nil
	c.inline.set = false
	c.endQuietLocked()
	c.mu.Unlock()
}

func (c *Context) endQuietLocked() {
	if c.quiet != nil {
		close(c.quiet)
		c.quiet = nil
	}
}

// Children returns a process's live threads, in creation order.
func (c *Context) Children() []*Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Context, 0, len(c.children))
	for _, ch := range c.children {
		if ch.stateLocked() != StateExited {
			out = append(out, ch)
		}
	}
	return out
}

func (c *Context) stateLocked() RunState {
	if c == nil {
		return StateExited
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Exited reports whether the context has exited.
func (c *Context) Exited() bool { s, _, _ := c.State(); return s == StateExited }

// Hold takes a reference that keeps the context valid until Release.
func (c *Context) Hold() *Context { c.refs.Add(1); return c }

// Release drops a reference taken with Hold. When the last reference of an exited
// context is dropped, it is disposed.
func (c *Context) Release() {
	if c.refs.Add(-1) == 0 {
		c.target.dispose(c)
	}
}

// SetSignalMasks sets a process's don't-stop and don't-pass signal sets.
func (c *Context) SetSignalMasks(dontStop, dontPass SignalSet) {
	p := c.Process()
	p.mu.Lock()
	p.dontStop, p.dontPass = dontStop, dontPass
	p.mu.Unlock()
	c.target.emit(Event{Kind: EventChanged, Context: p})
}

// Extension is a typed slot that other layers attach to every context (the idea
// of context.h's context_extension): the first Get on a context allocates a zero
// T for it. Create extensions once, at package init time.
type Extension[T any] struct{ slot int }

var extensionCount atomic.Int32

// NewExtension registers a new per-context extension.
func NewExtension[T any]() *Extension[T] {
	return &Extension[T]{slot: int(extensionCount.Add(1)) - 1}
}

// Get returns the context's T, allocating it on first use. The pointer is stable
// for the context's lifetime; synchronising access to *T is the caller's job.
func (e *Extension[T]) Get(c *Context) *T {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ext) <= e.slot {
		n := int(extensionCount.Load())
		grown := make([]any, n)
		copy(grown, c.ext)
		c.ext = grown
	}
	if v, ok := c.ext[e.slot].(*T); ok {
		return v
	}
	v := new(T)
	c.ext[e.slot] = v
	return v
}
