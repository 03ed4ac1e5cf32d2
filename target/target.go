package target

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sondedbg/sonde/arch"
)

// Target is one debugging session over one backend: the tree of processes and
// threads it debugs, their breakpoints, and the listeners that follow them.
type Target struct {
	backend Backend

	mu          sync.Mutex
	contexts    map[ID]*Context
	processes   []*Context
	breakpoints map[*Context][]*Breakpoint
	nextBP      int
	advisor     StepAdvisor
	closed      bool
	steps       stepState
	execHooks   processHooks
	forkHooks   processHooks

	events eventQueue
}

// New makes a Target over a backend. Backends' constructors call it; users call
// the backend's constructor (ptrace.New, core.Open).
func New(b Backend) *Target {
	t := &Target{
		backend:     b,
		contexts:    map[ID]*Context{},
		breakpoints: map[*Context][]*Breakpoint{},
	}
	t.events.start()
	return t
}

// Arch returns the target's architecture.
func (t *Target) Arch() *arch.Arch { return t.backend.Arch() }

// Backend returns the backend, for layers that need backend-specific features
// through an interface check (e.g. a memory image of a live process).
func (t *Target) Backend() Backend { return t.backend }

// AddListener subscribes l to every event from now on. The returned function
// unsubscribes it.
func (t *Target) AddListener(l Listener) (remove func()) { return t.events.add(l) }

// AddSyncListener subscribes l to every event from now on, called
// synchronously where the event is reported (for a live backend, the tracer
// thread, right after the kernel reported the stop), before the ordinary
// listeners see it, one event at a time and in order.
//
// It is for the hot path of a front end: reporting a breakpoint hit to a
// client without waking another goroutine first. l runs while the Target
// cannot report anything else, so it must be quick, must not call into the
// Target (directly or by waiting for a goroutine that does), and must not
// wait for a lock that is held across such calls; TryLock is the way to
// take one. What it cannot do at once it leaves to an ordinary listener.
//
// When every synchronous listener returns true for an event, the ordinary
// listeners get it within about a millisecond instead of at once: a thread
// hitting a breakpoint thousands of times a second then wakes their
// goroutine once a millisecond, not twice a hit, on a CPU the client and
// the program need.
func (t *Target) AddSyncListener(l SyncListener) (remove func()) { return t.events.addSync(l) }

// OnExec installs f to run when a process execs a new program, before any
// of that program runs: the thread that exec'd waits until every such f has
// returned, so what f plants in the new address space (breakpoints, the
// dynamic linker's hook) is in place when the program starts. f runs where
// the backend noticed the exec (the tracer thread of a live backend); it may
// call any method of the Target, as eventpoint handlers may. The returned
// function uninstalls f.
func (t *Target) OnExec(f func(proc *Context)) (remove func()) { return t.execHooks.add(f) }

// OnFork installs f to run when a followed process forks (LaunchOptions.
// FollowForks), with the child held before its first instruction, as OnExec
// hooks are held at the exec; f gets the child's process context.
func (t *Target) OnFork(f func(child *Context)) (remove func()) { return t.forkHooks.add(f) }

// processHooks are functions run on a process where a backend reports an
// event that must be acted on before the process goes on (OnExec, OnFork).
type processHooks struct {
	mu sync.Mutex
	fs []*func(*Context)
}

func (h *processHooks) add(f func(*Context)) (remove func()) {
	p := &f
	h.mu.Lock()
	h.fs = append(h.fs, p)
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for i, q := range h.fs {
			if q == p {
				h.fs = append(h.fs[:i:i], h.fs[i+1:]...)
				return
			}
		}
	}
}

// run calls every hook on proc, outside the lock (a hook may add or remove
// hooks).
func (h *processHooks) run(proc *Context) {
	h.mu.Lock()
	fs := slices.Clone(h.fs)
	h.mu.Unlock()
	for _, f := range fs {
		(*f)(proc)
	}
}

// Launch starts a program under the debugger.
func (t *Target) Launch(opts LaunchOptions) (*Context, *ProcessIO, error) {
	if err := t.checkOpen("launch"); err != nil {
		return nil, nil, err
	}
	return t.backend.Launch(opts)
}

// Attach attaches to a running process.
func (t *Target) Attach(pid int, opts AttachOptions) (*Context, error) {
	if err := t.checkOpen("attach"); err != nil {
		return nil, err
	}
	if c := t.LookupPID(pid, 0); c != nil {
		return nil, Errorf(CodeAlreadyAttached, "attach", c.id, nil)
	}
	return t.backend.Attach(pid, opts)
}

func (t *Target) checkOpen(op string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return Errorf(CodeInvalidContext, op, "", fmt.Errorf("target is closed"))
	}
	return nil
}

// Lookup finds a live (not yet exited) context by ID.
func (t *Target) Lookup(id ID) (*Context, error) {
	t.mu.Lock()
	c := t.contexts[id]
	t.mu.Unlock()
	if c == nil {
		return nil, Errorf(CodeInvalidContext, "lookup", id, nil)
	}
	return c, nil
}

// LookupPID finds a process (tid 0) or thread by OS ids, or returns nil.
func (t *Target) LookupPID(pid, tid int) *Context {
	id := ProcessID(pid)
	if tid != 0 {
		id = ThreadID(pid, tid)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.contexts[id]
}

// Processes returns the live processes in the order they were added.
func (t *Target) Processes() []*Context {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*Context(nil), t.processes...)
}

// SetStepAdvisor installs the source-level helper for line stepping and step-out.
func (t *Target) SetStepAdvisor(a StepAdvisor) {
	t.mu.Lock()
	t.advisor = a
	t.mu.Unlock()
}

// StepAdvisor returns the installed advisor, or nil.
func (t *Target) StepAdvisor() StepAdvisor {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.advisor
}

// Close removes every patch, detaches from every live process (launched ones
// included: they run on) and stops event delivery after the last event.
func (t *Target) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()
	err := t.backend.Close()
	t.events.stop()
	return err
}

// --- breakpoints ---

// SetBreakpoint plants a breakpoint in proc (a process or any of its threads).
func (t *Target) SetBreakpoint(ctx *Context, spec BreakpointSpec) (*Breakpoint, error) {
	proc := ctx.Process()
	if err := live(proc, "set breakpoint"); err != nil {
		return nil, err
	}
	if spec.Kind == Watchpoint {
		switch spec.Size {
		case 1, 2, 4, 8:
		default:
			return nil, Errorf(CodeInvalidDataSize, "set watchpoint", proc.id, fmt.Errorf("size %d: must be 1, 2, 4 or 8", spec.Size))
		}
		if spec.Addr%uint64(spec.Size) != 0 {
			return nil, Errorf(CodeInvalidAddress, "set watchpoint", proc.id, fmt.Errorf("0x%x is not aligned to its size %d", spec.Addr, spec.Size))
		}
		if spec.Access == 0 {
			spec.Access = AccessWrite
		}
	}
	t.mu.Lock()
	t.nextBP++
	bp := &Breakpoint{ID: t.nextBP, Spec: spec, Process: proc}
	t.mu.Unlock()
	if err := t.backend.InsertBreakpoint(bp); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.breakpoints[proc] = append(t.breakpoints[proc], bp)
	t.mu.Unlock()
	return bp, nil
}

// RemoveBreakpoint removes a breakpoint planted with SetBreakpoint.
func (t *Target) RemoveBreakpoint(bp *Breakpoint) error {
	t.mu.Lock()
	list := t.breakpoints[bp.Process]
	i := indexOf(list, bp)
	if i < 0 {
		t.mu.Unlock()
		return Errorf(CodeInvalidContext, "remove breakpoint", bp.Process.id, fmt.Errorf("breakpoint %d is not planted", bp.ID))
	}
	t.breakpoints[bp.Process] = append(list[:i:i], list[i+1:]...)
	t.mu.Unlock()
	if bp.Process.Exited() {
		return nil
	}
	return t.backend.RemoveBreakpoint(bp)
}

// Breakpoints returns the breakpoints planted in a process.
func (t *Target) Breakpoints(proc *Context) []*Breakpoint {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*Breakpoint(nil), t.breakpoints[proc.Process()]...)
}

// BreakpointAt returns proc's breakpoints whose address is addr (backends use it
// to tell a hit).
func (t *Target) BreakpointsAt(proc *Context, addr uint64) []*Breakpoint {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*Breakpoint
	for _, bp := range t.breakpoints[proc.Process()] {
		if bp.Spec.Addr == addr && bp.Spec.Kind != Watchpoint {
			out = append(out, bp)
		}
	}
	return out
}

// ForgetBreakpoints drops a process's breakpoints without touching its memory:
// backends call it after exec replaced the address space, or at exit.
func (t *Target) ForgetBreakpoints(proc *Context) []*Breakpoint {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.breakpoints[proc]
	delete(t.breakpoints, proc)
	return old
}

func indexOf[T comparable](s []T, v T) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// --- operations on contexts ---

func live(c *Context, op string) error {
	if c == nil {
		return Errorf(CodeInvalidContext, op, "", nil)
	}
	if c.Exited() {
		return Errorf(CodeAlreadyExited, op, c.id, nil)
	}
	return nil
}

// ReadMemory reads the memory of c's process; software breakpoints never show.
// A partial read returns the count of valid bytes and a *MemoryError.
func (c *Context) ReadMemory(addr uint64, p []byte) (int, error) {
	if err := live(c, "read memory"); err != nil {
		return 0, err
	}
	return c.target.backend.ReadMemory(c.Process(), addr, p)
}

// WriteMemory writes the memory of c's process.
func (c *Context) WriteMemory(addr uint64, p []byte) (int, error) {
	if err := live(c, "write memory"); err != nil {
		return 0, err
	}
	return c.target.backend.WriteMemory(c.Process(), addr, p)
}

// MemoryMap returns the mappings of c's process, sorted by address.
func (c *Context) MemoryMap() ([]MemoryRegion, error) {
	if err := live(c, "memory map"); err != nil {
		return nil, err
	}
	m, err := c.target.backend.MemoryMap(c.Process())
	if err != nil {
		return nil, err
	}
	sort.Slice(m, func(i, j int) bool { return m[i].Addr < m[j].Addr })
	return m, nil
}

func (c *Context) stoppedThread(op string) error {
	if err := live(c, op); err != nil {
		return err
	}
	if c.kind != KindThread {
		return Errorf(CodeInvalidContext, op, c.id, fmt.Errorf("a process has no registers; name one of its threads"))
	}
	if s, _, _ := c.State(); s == StateRunning {
		return Errorf(CodeIsRunning, op, c.id, nil)
	}
	return nil
}

// Registers returns a copy of a stopped thread's registers.
func (c *Context) Registers() (*Registers, error) {
	if err := c.stoppedThread("read registers"); err != nil {
		return nil, err
	}
	r, err := c.target.backend.Registers(c)
	if err != nil {
		return nil, err
	}
	return r.Clone(), nil
}

// SetRegisters writes a stopped thread's registers.
func (c *Context) SetRegisters(r *Registers) error {
	if err := c.stoppedThread("write registers"); err != nil {
		return err
	}
	c.mu.Lock()
	c.stopRegs = nil
	c.mu.Unlock()
	return c.target.backend.SetRegisters(c, r)
}

// GeneralRegisters is Registers without the extended state (XState is nil):
// what unwinding needs. When the backend published the registers it read at
// this stop (SetStopRegisters), they are the answer, without a round trip to
// the backend's thread.
func (c *Context) GeneralRegisters() (*Registers, error) {
	if err := c.stoppedThread("read registers"); err != nil {
		return nil, err
	}
	c.mu.Lock()
	r := c.stopRegs
	c.mu.Unlock()
	if r != nil {
		return r.Clone(), nil
	}
	r, err := c.Registers()
	if err != nil {
		return nil, err
	}
	r.XState = nil
	return r, nil
}

// WriteRegister overwrites bytes [offset, offset+len(value)) of one register.
func (c *Context) WriteRegister(reg *arch.Register, offset int, value []byte) error {
	r, err := c.Registers()
	if err != nil {
		return err
	}
	if err := r.Set(reg, offset, value); err != nil {
		return err
	}
	return c.target.backend.SetRegisters(c, r)
}

// Suspend stops a running thread, or every running thread of a process. It
// returns once they are stopped; the Stopped events follow.
//
// A thread stopped only for sonde's own work (a line step between legs, an
// eventpoint's handlers running) is running as far as clients know: Suspend
// waits for that work to end, then stops the thread if it runs on (as the C
// agent does, it is not "already stopped"). A process's suspend does so for
// each of its threads: a backend counts such a thread as stopped already and
// would leave it to whoever holds it, who then lets it run on (the next leg
// of a line step) in a process the client believes suspended.
func (c *Context) Suspend() error {
	if err := live(c, "suspend"); err != nil {
		return err
	}
	if c.kind == KindThread {
		s, err := c.awaitQuietStop()
		if err != nil {
			return err
		}
		if s != StateRunning {
			return Errorf(CodeAlreadyStopped, "suspend", c.id, nil)
		}
		return c.target.backend.Suspend(c)
	}
	for round := 0; ; round++ {
		for _, th := range c.Children() {
			if _, err := th.awaitQuietStop(); err != nil {
				return err
			}
		}
		if err := c.target.backend.Suspend(c); err != nil {
			return err
		}
		// A thread the interrupt met on its way into a quiet stop (a
		// step's leg ending) is stopped for its holder, who may let it
		// run again: wait for it and stop it once more.
		if !c.anyQuiet() || round >= maxSuspendRounds {
			return nil
		}
	}
}

// maxSuspendRounds bounds a process's suspend when its threads keep
// stopping quietly as it stops them.
const maxSuspendRounds = 100

// anyQuiet reports whether a thread of process c is stopped quietly.
func (c *Context) anyQuiet() bool {
	for _, th := range c.Children() {
		th.mu.Lock()
		q := th.quiet
		th.mu.Unlock()
		if q != nil {
			return true
		}
	}
	return false
}

// quietStopWait bounds how long Suspend waits for sonde's own work at a
// thread's stop (eventpoint handlers evaluating a condition, a step's leg).
const quietStopWait = 10 * time.Second

// awaitQuietStop waits until a thread is no longer stopped quietly and
// returns its state then. The state is read under the same lock as the quiet
// stop: a thread in a hot loop through an eventpoint may stop quietly again
// a moment after the last stop ended, and a state read apart from that
// check would take the new quiet stop for a real one ("already stopped").
func (c *Context) awaitQuietStop() (RunState, error) {
	deadline := time.NewTimer(quietStopWait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		q, state := c.quiet, c.state
		c.mu.Unlock()
		if q == nil {
			return state, nil
		}
		select {
		case <-q:
		case <-deadline.C:
			return state, Errorf(CodeOther, "suspend", c.id, fmt.Errorf("the thread is still busy with an internal stop after %v", quietStopWait))
		}
	}
}

// CanResume returns the resume modes c supports.
func (c *Context) CanResume() ResumeModes {
	if c.Exited() {
		return 0
	}
	return c.target.backend.CanResume(c) | c.target.lineModesFor(c)
}

// Resume resumes a stopped thread, or every stopped thread of a process.
func (c *Context) Resume(mode ResumeMode, opts ResumeOptions) error {
	if err := c.checkResume(mode, &opts); err != nil {
		return err
	}
	c.noteResume(mode)
	if lineModes.Has(mode) && !c.target.backend.CanResume(c).Has(mode) {
		return c.target.startLineStep(c, mode)
	}
	return c.target.backend.Resume(c, mode, opts)
}

// ResumeAsync is Resume for a caller that must not wait for the target: a
// TCF agent resuming a thread the moment its stop was reported, so that no
// goroutine has to wake while the thread runs just to carry "done" back.
// done gets the outcome exactly once: before ResumeAsync returns, or later
// on the backend's own thread, where it must not block (it may call the
// Target). Requests of one caller keep their order with its other requests.
func (c *Context) ResumeAsync(mode ResumeMode, opts ResumeOptions, done func(error)) {
	ar, ok := c.target.backend.(AsyncResumer)
	if !ok || lineModes.Has(mode) && !c.target.backend.CanResume(c).Has(mode) {
		done(c.Resume(mode, opts))
		return
	}
	if err := c.checkResume(mode, &opts); err != nil {
		done(err)
		return
	}
	c.noteResume(mode)
	ar.ResumeAsync(c, mode, opts, done)
}

// checkResume is what the model knows about a resume before the backend
// sees it; it defaults opts.Count.
func (c *Context) checkResume(mode ResumeMode, opts *ResumeOptions) error {
	if err := live(c, "resume"); err != nil {
		return err
	}
	if c.kind == KindThread {
		if s, _, _ := c.State(); s == StateRunning {
			return Errorf(CodeAlreadyRunning, "resume", c.id, nil)
		}
	}
	if !c.CanResume().Has(mode) {
		return Errorf(CodeUnsupported, "resume", c.id, fmt.Errorf("%s is not supported here", mode))
	}
	if opts.Count <= 0 {
		opts.Count = 1
	}
	return nil
}

// Terminate kills c's process.
func (c *Context) Terminate() error {
	if err := live(c, "terminate"); err != nil {
		return err
	}
	return c.target.backend.Terminate(c)
}

// Detach removes every patch from c's process and lets it run on untraced.
func (c *Context) Detach() error {
	if err := live(c, "detach"); err != nil {
		return err
	}
	return c.target.backend.Detach(c.Process())
}

// Signal sends sig to c (a thread) or c's process.
func (c *Context) Signal(sig Signal) error {
	if err := live(c, "signal"); err != nil {
		return err
	}
	return c.target.backend.Signal(c, sig)
}

// Auxv returns the ELF auxiliary vector of c's process, when the backend has it.
func (c *Context) Auxv() ([]byte, error) {
	if r, ok := c.target.backend.(AuxvReader); ok {
		return r.Auxv(c.Process())
	}
	if r, ok := c.target.backend.(auxvBytes); ok { // a core: its Auxv method parses
		return r.AuxvBytes(c.Process())
	}
	return nil, Errorf(CodeUnsupported, "auxv", c.id, nil)
}

// LocateFile returns the file that stands in for the mapped file named mapped
// (a MemoryMap path) in c's process: mapped itself for a live process, the
// file found and verified for it by a core backend (see FileLocator).
func (c *Context) LocateFile(mapped string) (string, error) {
	if l, ok := c.target.backend.(FileLocator); ok {
		return l.LocateFile(c.Process(), mapped)
	}
	return mapped, nil
}

// Executable returns the path of c's process's main executable, when known.
func (c *Context) Executable() (string, error) {
	if r, ok := c.target.backend.(ExecutablePath); ok {
		return r.Executable(c.Process())
	}
	return "", Errorf(CodeUnsupported, "executable", c.id, nil)
}
