// Package services holds sonde's TCF services over debug targets: one file per
// service, each a type whose methods are the service's commands (the C
// agent's command_* functions), translating them into calls on the target
// model and on session, and a handler turning target events into the
// service's protocol events. Register* on Agent makes a service and binds its
// commands; RegisterAll (services.go) offers them all.
//
// What a channel owns — the processes it attached or launched, the stops it
// requested, the breakpoints it planted — is released when it closes, and
// when the last channel closes no process stays stopped or traced because of
// sonde unless the agent runs with --keep-attached (ownership.go).
//
// An Agent owns the live target that every channel shares. Events are emitted
// from its target listeners (fastevents.go: a synchronous one for the hot
// path of stops and starts, an ordinary one for the rest), so every channel
// sees them in the order the target changed.
package services

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"syscall"

	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// Agent is the state the services share: the server, the live target and what
// the services remember per context.
type Agent struct {
	srv     *tcf.Server
	target  *target.Target
	session *session.Session
	log     *slog.Logger

	// launched remembers what Processes.start made, per process ID.
	launched launchedTable

	replies replyCache
	streams streamTable
	bps     breakpointTable
	fast    fastEvents
	own     ownership
	stacks  *stackCache
	// memoryMap and pathMap are the services of those names, or nil:
	// target events and breakpoints by file use them.
	memoryMap *memoryMap
	pathMap   *pathMap
	// exprData is the Expressions service's state (and the data side of
	// Symbols'), dprintfs the DPrintf streams: services other services
	// call into.
	exprData *dataState
	dprintfs *dprintfState

	removeListener func()
	events         *eventOut
	// breaks is the Breakpoints service's state (breakpoints.go).
	breaks *breakpoints
	// adopted holds the processes whose breakpoints and library tracking are
	// set up (mu held).
	mu      sync.Mutex
	adopted map[*target.Context]*sync.Once

	// launches is what launches keep to hide or show entry stops.
	launches launchTable
}

// New makes an Agent serving the target of sess on srv. Call Register* for the
// services to offer, then Start before srv.Serve.
func New(srv *tcf.Server, sess *session.Session) *Agent {
	a := &Agent{
		srv:      srv,
		target:   sess.Target(),
		session:  sess,
		log:      srv.Logger(),
		stacks:   newStackCache(sess, srv.Logger()),
		launched: launchedTable{byID: map[string]*launchedProcess{}},
		adopted:  map[*target.Context]*sync.Once{},
		launches: launchTable{hideEntry: map[int]int{}, entryStop: map[int]bool{}},
		exprData: newDataState(),
		dprintfs: &dprintfState{streams: map[*tcf.Channel]*stream{}},
		events:   &eventOut{srv: srv, log: srv.Logger()},
	}
	a.breaks = newBreakpoints(a)
	return a
}

// Target returns the target the agent serves.
func (a *Agent) Target() *target.Target { return a.target }

// Start subscribes to the target's events and registers the shutdown hook that
// removes every patch and detaches every process.
func (a *Agent) Start() {
	a.events.offered = map[string]bool{}
	for _, name := range a.srv.ServiceNames() {
		a.events.offered[name] = true
	}
	a.trackChannels()
	a.removeListener = a.target.AddListener(a.onEvent)
	a.target.AddSyncListener(a.onEventNow)
	// Breakpoints in a library are planted when it loads, before its code
	// can run (the loading thread waits at the linker's hook meanwhile).
	a.session.OnModulesChanged(func(proc *target.Context) {
		if a.bps.offered() {
			a.breaks.plantInProcess(proc)
		}
	})
	// And in a new program before it starts (its libraries follow from the
	// linker's hook), and in a followed fork child before it runs.
	a.target.OnExec(func(proc *target.Context) {
		if a.bps.offered() {
			a.breaks.plantInProcess(proc)
		}
	})
	a.target.OnFork(a.adopt)
	a.srv.OnShutdown(func(context.Context) {
		if err := a.target.Close(); err != nil {
			a.log.Error("closing the target at shutdown", "err", err)
		}
	})
}

// lookup finds a context by its TCF ID.
func (a *Agent) lookup(id string) (*target.Context, error) {
	return a.target.Lookup(target.ID(id))
}

// onEvent turns one target event into the protocol events of every service,
// in the order the C agent sends them. Each service's handler sends its own
// events (runControlEvent, memoryEvent, memoryMap.event, processesEvent);
// the agent keeps its books (adoption, ownership, caches) around them.
func (a *Agent) onEvent(e target.Event) {
	c := e.Context
	if a.sentEarly(e) {
		// onEventNow sent it: what is left is bookkeeping.
		if e.Kind == target.EventStopped {
			a.breaks.releaseSpent(e.Reason)
		}
		return
	}
	defer a.sentLate(e)
	switch e.Kind {
	case target.EventCreated:
		a.runControlEvent(e)
		a.memoryEvent(e)
		if c.IsProcess() && c.Creator() == nil {
			// (Fork children are adopted by the OnFork hook, while they
			// are held: both at once would wait for each other.)
			a.adopt(c)
		}
	case target.EventChanged:
		a.runControlEvent(e)
		a.memoryEvent(e)
	case target.EventStopped, target.EventStarted:
		a.stacks.forget(c)
		a.runControlEvent(e)
	case target.EventMemoryMapChanged:
		a.replies.drop(string(c.ID()))
		if a.memoryMap != nil {
			a.memoryMap.event(e)
		}
	case target.EventExited:
		a.own.forget(c)
		a.data().forget(c)
		if !c.IsProcess() {
			a.stacks.forget(c)
		}
		// The process's exit, then the removal of its main thread and of
		// itself (other threads were removed as they went): the C agent's
		// order.
		a.processesEvent(e)
		a.runControlEvent(e)
		a.memoryEvent(e)
		if c.IsProcess() {
			a.replies.drop(string(c.ID()))
			a.processGone(c)
			if a.memoryMap != nil {
				a.memoryMap.event(e)
			}
			a.mu.Lock()
			delete(a.adopted, c)
			a.mu.Unlock()
		}
	}
}

// emitSuspended sends the events of a thread's stop: contextSuspended, and
// contextException for a fault. The entry stop of a launch is reported with
// the exec's SIGTRAP, as the C agent does. With takeSpent, the Temporary
// breakpoints the stop was at are removed before the client hears of the
// stop (named in it all the same; their contextRemoved follows it): a
// client that looks at once must find neither them nor their probes' jumps.
func (a *Agent) emitSuspended(e target.Event, entry, takeSpent bool) {
	// Before the event: writing it wakes the client, which may take this
	// CPU from the thread writing it for a while.
	a.stacks.prefetch(e.Context)
	id := string(e.Context.ID())
	reason, params := a.stateOf(e.Reason)
	var spent []string
	if takeSpent {
		spent = a.breaks.takeSpent(e.Reason)
		defer func() {
			if len(spent) > 0 {
				a.emit("Breakpoints", "contextRemoved", spent)
			}
		}()
	}
	if entry && params["Signal"] == nil {
		params["Signal"] = int(syscall.SIGTRAP)
		params["SignalName"] = target.Signal(syscall.SIGTRAP).Name()
		params["SignalDescription"] = target.Signal(syscall.SIGTRAP).Description()
	}
	a.emit("RunControl", "contextSuspended", id, e.PC, reason, params)
	if r := e.Reason; r != nil && (r.Kind == target.ReasonSignal || r.Kind == target.ReasonException) && isFault(r.Signal) {
		what := r.Signal.Description()
		if r.Kind == target.ReasonException && r.Message != "" {
			what = r.Message // with the faulting address
		}
		a.emit("RunControl", "contextException", id, "Signal "+itoa(int(r.Signal))+": "+what)
	}
}

// eventOut sends the events of the services offered.
type eventOut struct {
	srv *tcf.Server
	log *slog.Logger
	// offered is the set of services registered on the server when Start ran.
	offered map[string]bool
}

// emit sends an event of an offered service to every channel.
func (a *Agent) emit(service, name string, args ...any) { a.events.emit(service, name, args...) }

// emitBehind is emit for an event another usually follows at once.
func (a *Agent) emitBehind(service, name string, args ...any) {
	a.events.emitBehind(service, name, args...)
}

// emit sends an event of an offered service to every channel.
func (o *eventOut) emit(service, name string, args ...any) {
	if !o.offered[service] {
		return
	}
	if err := o.srv.Emit(service, name, args...); err != nil {
		o.log.Error("emitting event", "service", service, "event", name, "err", err)
	}
}

// emitBehind is emit for an event another usually follows at once
// (tcf.Server.EmitBehind): one write carries both.
func (o *eventOut) emitBehind(service, name string, args ...any) {
	if !o.offered[service] {
		return
	}
	if err := o.srv.EmitBehind(service, name, args...); err != nil {
		o.log.Error("emitting event", "service", service, "event", name, "err", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// adopt sets a new process up once: its shared-library loads are followed (so
// breakpoints in libraries are planted when they load) and the client's
// breakpoints are planted. Launch and attach call it before the process runs;
// the OnFork hook calls it for followed fork children, before they run.
func (a *Agent) adopt(proc *target.Context) {
	a.mu.Lock()
	once := a.adopted[proc]
	if once == nil {
		once = &sync.Once{}
		a.adopted[proc] = once
	}
	a.mu.Unlock()
	once.Do(func() {
		if err := a.session.TrackModules(proc, false); err != nil {
			a.log.Debug("not following shared libraries", "process", proc.ID(), "err", err)
		}
		if a.bps.offered() {
			a.breaks.plantInProcess(proc)
		}
	})
}
