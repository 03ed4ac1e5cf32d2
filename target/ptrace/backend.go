package ptrace

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/memimage"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/translate"
)

// Backend is the live Linux implementation of target.Backend. Get one with New;
// layers that need more than the model offers reach it with
// tg.Backend().(*ptrace.Backend).
type Backend struct {
	t      *target.Target
	reqs   chan *request
	done   chan struct{} // closed when the tracer thread has finished
	reaper *reaper
	// tracerTid is the OS thread of the tracer goroutine, set before New returns.
	tracerTid int

	// mu guards procByPID for goroutines other than the tracer (memory I/O).
	mu        sync.Mutex
	procByPID map[int]*process

	// Owned by the tracer thread.
	threads  map[int]*thread
	orphans  map[int][]unix.WaitStatus // statuses of tids not known yet (new clone children)
	deferred []waitEvent               // consumed statuses waiting to be handled
	closing  bool
	spinner  spinPolicy // whether to spin after work
	// clientsTurn: the last stop is the client's to inspect (ClientsTurn),
	// set by any goroutine, cleared by the next request; no spin meanwhile.
	clientsTurn atomic.Bool

	// noDisplaced turns displaced stepping off (tests' negative controls).
	noDisplaced bool
	// scratchFar maps the displaced-stepping area wherever the kernel likes
	// (out of reach: scratch registers); noTranslateBack leaves a stop in a
	// slot untranslated. Both for tests only.
	scratchFar, noTranslateBack bool
	dstats                      displacedStats
}

// request is an operation for the tracer thread. A request made by do has a
// done channel its caller waits on; a posted one (post) has none: whoever
// claims it first either runs it or, when the tracer thread is gone, cancels
// it, so its caller hears back exactly once.
type request struct {
	fn      func()
	done    chan struct{}
	claimed atomic.Bool
	cancel  func()
}

// finish runs r's operation; it is called on the tracer thread.
func (b *Backend) finish(r *request) {
	if r.done == nil {
		if r.claimed.CompareAndSwap(false, true) {
			b.runSafely(r.fn)
		}
		return
	}
	b.runSafely(r.fn)
	close(r.done)
}

// cancelPosted tells the callers of posted requests still queued that the
// tracer thread has ended; it runs after done is closed.
func (b *Backend) cancelPosted() {
	for {
		select {
		case r := <-b.reqs:
			if r.done == nil && r.claimed.CompareAndSwap(false, true) {
				r.cancel()
			}
		default:
			return
		}
	}
}

// process is the backend's state of one traced process.
type process struct {
	pid      int
	ctx      *target.Context // nil for a hidden vfork child
	threads  map[int]*thread
	follow   bool // attach fork/vfork/clone children automatically
	launched bool // sonde is its parent: it must reap it
	// hidden marks a vfork child that is not followed: it shares its parent's
	// memory, breakpoints included, so it stays traced (invisibly) until it
	// execs or exits, and its breakpoint hits are stepped over silently.
	hidden bool
	// memOwner is the process whose memory (and breakpoints) this one shares:
	// itself, or the parent for a vfork child before exec.
	memOwner   *process
	parent     *process // the process that forked it, for cleaning its copy of memory
	creatorPID int
	stopAll    bool // an operation wants every thread stopped: new threads stop too
	// swallowCont counts SIGCONTs sonde sent itself and must not report.
	swallowCont int

	memMu   sync.RWMutex // guards mem, sw, shadow: readers are callers' goroutines
	mem     *os.File     // /proc/PID/mem, read-write
	sw      map[uint64]*swBreakpoint
	shadow  translate.Shadow // the original bytes under sw's int3s
	removed map[uint64]bool  // software breakpoints removed while threads ran
	hw      [4]*target.Breakpoint
	images  []*memimage.Image // images handed out by MemoryImage, kept current
	execs   int               // execs seen: the generation of the address space
	// The displaced-stepping area and the translation table of generated
	// code in this address space (a memory owner's; tracer thread only, but
	// tt is safe for any goroutine).
	scratch    *scratchArea
	scratchErr error
	// scratchUnadvised is an area mapped whose madvise(MADV_DONTFORK) was
	// interrupted (a signal came first): the next try goes on from it.
	scratchUnadvised uint64
	tt               translate.Table
	hwGen            int // bumped on every change of hw; threads catch up before running
}

// thread is the backend's state of one traced thread.
type thread struct {
	tid  int
	proc *process
	ctx  *target.Context
	// status is /proc/TID/status, opened at the first pass-if-handled
	// signal and re-read in place at the next (dispositions.go); closed
	// when the thread is dropped. Tracer thread only.
	status *os.File

	running      bool // not in a ptrace-stop (running, or in PTRACE_LISTEN)
	listening    bool // held in a job-control stop with PTRACE_LISTEN
	groupStopped bool // the last PTRACE_EVENT_STOP said a group stop is in effect
	newborn      bool // its first stop (PTRACE_EVENT_STOP) has not been seen
	interrupting bool // PTRACE_INTERRUPT sent, trap not seen yet
	wantStop     bool // a Suspend waits for this thread to stop
	reported     bool // the model shows it stopped
	// startPending: resumed by a client, not yet reported as started. The
	// start is reported once the thread runs (or stops again at once), so
	// that telling clients is not on the way to PTRACE_CONT.
	startPending bool
	sig          int  // signal to pass when it runs again
	lastReq      int  // PTRACE_CONT or PTRACE_SINGLESTEP: how it was last restarted
	hwGen        int  // hw generation its debug registers hold
	hwExecHit    bool // stopped on a hardware instruction breakpoint: set RF to resume
	// inVfork: the thread waits in vfork for its child to exec or exit; it
	// cannot be stopped until then (the wait only ends for fatal signals).
	inVfork bool
	step    *stepState

	regs      [generalSize]byte
	xstate    []byte
	haveRegs  bool
	haveX     bool
	regsDirty bool
}

var errClosed = errors.New("the target is closed")

// New starts a ptrace backend and returns a Target over it. Its tracer thread
// lives until Close.
func New() (*target.Target, error) {
	if err := quietStops(); err != nil {
		// Not fatal: stops then cost a signal each, as before.
		fmt.Fprintf(os.Stderr, "sonde: ptrace backend: SIGCHLD action: %v\n", err)
	}
	b := &Backend{
		reqs:      make(chan *request, 16),
		done:      make(chan struct{}),
		reaper:    newReaper(),
		spinner:   newSpinPolicy(),
		procByPID: map[int]*process{},
		threads:   map[int]*thread{},
		orphans:   map[int][]unix.WaitStatus{},
	}
	b.t = target.New(b)
	started := make(chan struct{})
	go b.loop(started)
	<-started
	go b.reaper.run()
	return b.t, nil
}

// --- lookups ---

func (b *Backend) procOf(ctx *target.Context, op string) (*process, error) {
	b.mu.Lock()
	p := b.procByPID[ctx.PID()]
	ok := p != nil && p.ctx == ctx.Process()
	b.mu.Unlock()
	if !ok {
		return nil, target.Errorf(target.CodeInvalidContext, op, ctx.ID(), fmt.Errorf("not traced"))
	}
	return p, nil
}

func (b *Backend) threadOf(ctx *target.Context, op string) (*thread, error) {
	th := b.threads[ctx.TID()]
	if th == nil || th.ctx != ctx {
		if ctx.Exited() {
			return nil, target.Errorf(target.CodeAlreadyExited, op, ctx.ID(), nil)
		}
		return nil, target.Errorf(target.CodeInvalidContext, op, ctx.ID(), fmt.Errorf("not traced"))
	}
	return th, nil
}

// sortedThreads returns a process's threads by tid, for a stable order of work.
func (p *process) sortedThreads() []*thread {
	out := make([]*thread, 0, len(p.threads))
	for _, th := range p.threads {
		out = append(out, th)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].tid < out[j].tid })
	return out
}

func (b *Backend) addProcess(pid int) *process {
	p := &process{pid: pid, threads: map[int]*thread{}, sw: map[uint64]*swBreakpoint{}, removed: map[uint64]bool{}}
	p.memOwner = p
	p.mem = openMem(pid)
	b.mu.Lock()
	b.procByPID[pid] = p
	b.mu.Unlock()
	b.reaper.setGroup(pid, true)
	return p
}

// setProcessContext publishes a process's model context (under mu: memory calls
// from other goroutines look it up).
func (b *Backend) setProcessContext(p *process, ctx *target.Context) {
	b.mu.Lock()
	p.ctx = ctx
	b.mu.Unlock()
}

func (b *Backend) addThread(p *process, tid int) *thread {
	th := &thread{tid: tid, proc: p, lastReq: unix.PTRACE_CONT}
	p.threads[tid] = th
	b.threads[tid] = th
	b.reaper.add(tid)
	return th
}

func (b *Backend) dropThread(th *thread) {
	if th.status != nil {
		th.status.Close()
		th.status = nil
	}
	th.proc.releaseSlot(th.tid)
	delete(th.proc.threads, th.tid)
	if b.threads[th.tid] == th {
		delete(b.threads, th.tid)
	}
	b.reaper.remove(th.tid)
}

func (b *Backend) dropProcess(p *process) {
	for _, th := range p.threads {
		b.dropThread(th)
	}
	b.mu.Lock()
	if b.procByPID[p.pid] == p {
		delete(b.procByPID, p.pid)
		b.reaper.setGroup(p.pid, false)
	}
	b.mu.Unlock()
	p.memMu.Lock()
	if p.mem != nil {
		p.mem.Close()
		p.mem = nil
	}
	p.memMu.Unlock()
}

// Arch implements target.Backend.
func (b *Backend) Arch() *arch.Arch { return arch.AMD64 }

// Close detaches from every process (launched ones too: they run on) after
// removing every patch, then ends the tracer thread.
func (b *Backend) Close() error {
	var errs []error
	err := b.do("close", func() error {
		for _, p := range b.allProcesses() {
			if err := b.detachProcess(p); err != nil {
				errs = append(errs, err)
			}
		}
		b.closing = true
		return nil
	})
	if err != nil && !errors.Is(err, errClosed) {
		return err
	}
	<-b.done
	return errors.Join(errs...)
}

func (b *Backend) allProcesses() []*process {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*process, 0, len(b.procByPID))
	for _, p := range b.procByPID {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// openMem opens /proc/PID/mem for reading and writing; nil if it cannot (the
// process is gone; memory calls then fail with its errno).
func openMem(pid int) *os.File {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", pid), os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	return f
}
