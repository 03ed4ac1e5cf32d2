package target

// EventKind names what happened to a context.
type EventKind int

const (
	EventCreated          EventKind = iota // a context appeared (attach, launch, clone, fork)
	EventStopped                           // a thread stopped; Reason and PC say why and where
	EventStarted                           // a thread resumed
	EventChanged                           // properties changed (name, signal masks, exec)
	EventExited                            // the context exited; Exit says how
	EventDisposed                          // the last reference is gone; the context is forgotten
	EventMemoryMapChanged                  // a process's mappings changed (exec, dlopen)
)

func (k EventKind) String() string {
	return [...]string{"created", "stopped", "started", "changed", "exited", "disposed", "memory-map-changed"}[k]
}

// Event is one thing that happened. Fields are a snapshot taken when it happened.
type Event struct {
	Kind    EventKind
	Context *Context
	Reason  *SuspendReason // EventStopped
	PC      uint64         // EventStopped
	Exit    *ExitStatus    // EventExited
	// Seq numbers the Target's events from 1 in the order they happened, so
	// that a synchronous and an ordinary listener can tell they see the same
	// event.
	Seq uint64
}

// Listener receives events. Listeners of one Target are called one at a time, in
// the order events happened, on a goroutine of the Target's own: they may call
// back into the Target, and should not block for long.
type Listener func(Event)

// SyncListener is a synchronous listener (Target.AddSyncListener). It returns
// true when what e needs done soon is done, so that the ordinary listeners
// may see e a little later (lazyDelay) rather than being woken for it now.
type SyncListener func(e Event) (handled bool)
