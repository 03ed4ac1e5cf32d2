package target

// This file holds the methods backends call to report what happened. They keep
// the context tree, reference counts and event order consistent for every
// backend alike.

// AddProcess creates the context of a newly debugged process and sends Created.
// creator is the process that forked it, or nil.
func (t *Target) AddProcess(pid int, creator *Context, name string) *Context {
	c := &Context{target: t, id: ProcessID(pid), kind: KindProcess, pid: pid, tid: pid,
		creator: creator, name: name, state: StateRunning, dontStop: DefaultDontStop}
	c.refs.Store(1) // the target's own reference, dropped at exit
	t.mu.Lock()
	t.contexts[c.id] = c
	t.processes = append(t.processes, c)
	t.mu.Unlock()
	t.emit(Event{Kind: EventCreated, Context: c})
	return c
}

// AddThread creates a thread context of proc and sends Created. creator is the
// thread that cloned it, or nil. A new thread starts out running.
func (t *Target) AddThread(proc *Context, tid int, creator *Context, name string) *Context {
	c := &Context{target: t, id: ThreadID(proc.pid, tid), kind: KindThread, pid: proc.pid, tid: tid,
		parent: proc, creator: creator, name: name, state: StateRunning}
	c.refs.Store(1)
	proc.Hold() // a thread keeps its process valid
	t.mu.Lock()
	t.contexts[c.id] = c
	t.mu.Unlock()
	proc.mu.Lock()
	proc.children = append(proc.children, c)
	proc.mu.Unlock()
	t.emit(Event{Kind: EventCreated, Context: c})
	return c
}

// SetName changes a context's name and sends Changed.
func (t *Target) SetName(c *Context, name string) {
	c.mu.Lock()
	changed := c.name != name
	c.name = name
	c.mu.Unlock()
	if changed {
		t.emit(Event{Kind: EventChanged, Context: c})
	}
}

// Changed sends a Changed event for c (exec, masks, anything clients re-read).
func (t *Target) Changed(c *Context) { t.emit(Event{Kind: EventChanged, Context: c}) }

// MemoryMapChanged tells listeners that proc's mappings changed.
func (t *Target) MemoryMapChanged(proc *Context) {
	proc.Process().mapGen.Add(1)
	t.emit(Event{Kind: EventMemoryMapChanged, Context: proc})
}

// Execed records that proc exec'd a new program: it runs the OnExec hooks,
// then sends Changed and MemoryMapChanged. The backend calls it with the
// thread that exec'd held at the exec, and lets it run only afterwards;
// the hooks may call back into the backend from where Execed was called.
func (t *Target) Execed(proc *Context) {
	t.execHooks.run(proc)
	t.Changed(proc)
	t.MemoryMapChanged(proc)
}

// Forked runs the OnFork hooks on child, a followed process's fork child
// whose contexts exist and which the backend holds before its first
// instruction (and lets run only afterwards); as with Execed, the hooks may
// call back into the backend from where Forked was called.
func (t *Target) Forked(child *Context) {
	t.forkHooks.run(child)
}

// Stopped records that a thread stopped at pc and sends Stopped.
func (t *Target) Stopped(thread *Context, reason *SuspendReason, pc uint64) {
	if t.interceptStop(thread, reason, pc) || t.interceptEventpoint(thread, reason, pc) {
		return
	}
	thread.setStopped(reason, pc)
	t.emit(Event{Kind: EventStopped, Context: thread, Reason: reason, PC: pc})
}

// SetStopRegisters publishes the general registers a backend read at a
// thread's stop (call it before Stopped), so that GeneralRegisters needs no
// round trip to the backend until the thread runs or they are written.
func (t *Target) SetStopRegisters(thread *Context, r *Registers) {
	thread.mu.Lock()
	thread.stopRegs = r
	thread.mu.Unlock()
}

// Started records that a thread resumed and sends Started.
func (t *Target) Started(thread *Context) {
	thread.mu.Lock()
	thread.stopRegs = nil // even when the start is not shown: the thread runs
	thread.mu.Unlock()
	if t.interceptStart(thread) || t.interceptSilentStart(thread) {
		return
	}
	thread.setRunning()
	t.emit(Event{Kind: EventStarted, Context: thread})
}

// Exiting records that a thread began to exit (it will not run again).
func (t *Target) Exiting(thread *Context) {
	thread.mu.Lock()
	thread.state = StateExiting
	thread.endQuietLocked()
	thread.mu.Unlock()
	t.emit(Event{Kind: EventChanged, Context: thread})
}

// SetPending records the signals queued for delivery to c on resume.
func (t *Target) SetPending(c *Context, s SignalSet) {
	c.mu.Lock()
	c.pending = s
	c.mu.Unlock()
}

// Exited records that a thread or process is gone, sends Exited, removes it from
// lookups and drops the target's reference (Disposed follows once no one else
// holds it). A process's remaining threads exit first; its breakpoints go.
func (t *Target) Exited(c *Context, status ExitStatus) {
	if c.kind == KindProcess {
		for _, th := range c.Children() {
			t.Exited(th, status)
		}
		t.ForgetBreakpoints(c)
	}
	c.mu.Lock()
	if c.state == StateExited {
		c.mu.Unlock()
		return
	}
	c.state = StateExited
	c.reason = nil
	c.endQuietLocked()
	st := status
	c.exit = &st
	c.mu.Unlock()
	t.mu.Lock()
	delete(t.contexts, c.id)
	if c.kind == KindProcess {
		if i := indexOf(t.processes, c); i >= 0 {
			t.processes = append(t.processes[:i:i], t.processes[i+1:]...)
		}
	}
	t.mu.Unlock()
	if c.kind == KindThread {
		t.abandonStep(c)
	}
	t.emit(Event{Kind: EventExited, Context: c, Exit: &st})
	c.Release()
}

func (t *Target) dispose(c *Context) {
	t.emit(Event{Kind: EventDisposed, Context: c})
	if c.kind == KindThread {
		p := c.parent
		p.mu.Lock()
		if i := indexOf(p.children, c); i >= 0 {
			p.children = append(p.children[:i:i], p.children[i+1:]...)
		}
		p.mu.Unlock()
		p.Release()
	}
}

func (t *Target) emit(e Event) { t.events.push(e) }
