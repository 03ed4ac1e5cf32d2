package ptrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
)

// This file lets a layer above patch a live process's code (fast probes, in
// translate/probes): with every thread held, it injects system calls, writes
// text under no breakpoint, and steps threads out of an address range. Each of
// these is one hop to the tracer thread for the whole operation (Halt).

// Halted is a process whose every thread sonde holds stopped, handed to the
// function given to Halt or to a detach hook. It is valid only during that
// call, on the tracer thread.
type Halted struct {
	b *Backend
	p *process
}

// Halt runs fn on the tracer thread with every thread of proc stopped; the
// threads sonde stopped for it run on afterwards (threads a client sees
// stopped stay stopped).
func (b *Backend) Halt(proc *target.Context, fn func(h *Halted) error) error {
	return b.do("halt", func() error {
		p, err := b.procOf(proc, "halt")
		if err != nil {
			return err
		}
		held := b.haltAll(p)
		defer b.resumeOthers(held)
		return fn(&Halted{b: b, p: p})
	})
}

// haltAll stops every thread of p (and of processes sharing its memory) and
// returns those sonde stopped. Statuses met on the way (a clone event, a
// signal) are handled in order, which may restart their thread: then it is
// stopped again, until none runs.
func (b *Backend) haltAll(p *process) []*thread {
	var held []*thread
	for round := 0; round < 100; round++ {
		held = append(held, b.stopOthers(&thread{proc: p})...) // a thread of no one: stops them all
		// The statuses of this address space's threads, one at a time, the
		// others left where a wait inside the handling finds them (see drain).
		for {
			k := slices.IndexFunc(b.deferred, func(ev waitEvent) bool {
				th := b.threads[ev.tid]
				return th != nil && th.proc.memOwner == p.memOwner
			})
			if k < 0 {
				break
			}
			ev := b.deferred[k]
			b.deferred = slices.Delete(b.deferred, k, k+1)
			b.handleSafely(ev)
		}
		running := false
		for _, sp := range b.sharers(p.memOwner) {
			for _, th := range sp.sortedThreads() {
				running = running || (th.running && !th.inVfork)
			}
		}
		if !running {
			break
		}
	}
	return held
}

// detachHooksByBackend holds the hooks run (on the tracer thread, every
// thread stopped) before the backend detaches from a process, so that
// patches it does not know about (probes' jumps, code caches) go first.
var detachHooksByBackend sync.Map // *Backend -> *hookSet[func(*Halted) error]

// OnDetach registers f to run before the backend detaches from a process
// (Detach, Close), with every thread of it stopped; an error it returns is
// the detach's. remove unregisters it.
func (b *Backend) OnDetach(f func(h *Halted) error) (remove func()) {
	return hookSetOf[func(*Halted) error](&detachHooksByBackend, b).add(f)
}

// runDetachHooks runs the OnDetach hooks for p, whose threads are stopped,
// once each, and returns their errors, and an error for every range of
// generated code (AddGenerated) of p still registered after them: a code
// cache a hook could not free stays mapped in the program.
func (b *Backend) runDetachHooks(p *process) error {
	var errs []error
	for _, f := range registered[func(*Halted) error](&detachHooksByBackend, b) {
		b.runSafely(func() {
			if err := f(&Halted{b: b, p: p}); err != nil {
				errs = append(errs, err)
			}
		})
	}
	if v, ok := generatedByBackend.Load(b); ok {
		g := v.(*generated)
		g.mu.Lock()
		for _, r := range g.ranges {
			if r.pid == p.pid {
				errs = append(errs, fmt.Errorf("generated code at [%#x, %#x) is still mapped", r.lo, r.hi))
			}
		}
		g.mu.Unlock()
	}
	return errors.Join(errs...)
}

// PID returns the process ID.
func (h *Halted) PID() int { return h.p.pid }

// Context returns the process's context (nil for a hidden vfork child).
func (h *Halted) Context() *target.Context { return h.p.ctx }

// ThreadPCs returns the program counter of every stopped thread, by thread ID.
func (h *Halted) ThreadPCs() map[int]uint64 {
	out := map[int]uint64{}
	for _, th := range h.p.sortedThreads() {
		if th.running {
			continue
		}
		if pc := th.pc(); pc != 0 {
			out[th.tid] = pc
		}
	}
	return out
}

// ErrNoStoppedThread is returned when no thread of the process is in a
// ptrace-stop to run an injected system call.
var ErrNoStoppedThread = errors.New("no thread of the process is stopped")

// Offsets in user_regs_struct for system call injection.
const (
	offRAX     = 80
	offRDI     = 112
	offRSI     = 104
	offRDX     = 96
	offR10     = 56
	offR8      = 72
	offR9      = 64
	offOrigRAX = 120
)

var syscallInsn = []byte{0x0f, 0x05}

const eflagsTF = 1 << 8 // trap flag: single-step

// Syscall makes one stopped thread of the process run system call nr with
// args (up to six) and returns its raw result (a negative errno on failure,
// as the kernel returns it). The thread's registers and the two bytes where
// the syscall instruction is written (at its own PC) are restored, so the
// program never sees it. orig_rax is -1 while it runs so that a system call
// the thread was interrupted in is not restarted in the middle; with the
// registers restored afterwards the kernel restarts it as it would have.
func (h *Halted) Syscall(nr int, args ...uint64) (uint64, error) {
	if len(args) > 6 {
		return 0, fmt.Errorf("inject syscall %d: %d arguments, at most 6", nr, len(args))
	}
	var th *thread
	for _, t := range h.p.sortedThreads() {
		if !t.running && !t.inVfork {
			th = t
			break
		}
	}
	if th == nil {
		return 0, ErrNoStoppedThread
	}
	ret, pc, got, err := h.syscallOnce(th, nr, args)
	if err == nil && got != pc+2 {
		// (A thread interrupted just after an int3 of sonde's, its SIGTRAP
		// still queued, would end the step where it began: the interrupt
		// stop takes that trap, see takeInt3Trap.)
		err = fmt.Errorf("inject syscall %d: thread %d stopped at %#x, not after the syscall at %#x", nr, th.tid, got, pc)
	}
	return ret, err
}

// syscallOnce runs Syscall on thread th: it returns the
// result, the pc the syscall instruction was written at and the pc the
// thread's step ended at (pc+2 when the call ran).
func (h *Halted) syscallOnce(th *thread, nr int, args []uint64) (ret, pc, got uint64, err error) {
	if err := th.flushRegs(); err != nil {
		return 0, 0, 0, err
	}
	th.invalidateRegs()
	var saved [generalSize]byte
	if n, err := getRegSet(th.tid, ntPRStatus, saved[:]); err != nil || n != generalSize {
		return 0, 0, 0, fmt.Errorf("inject syscall: registers of thread %d: %v", th.tid, err)
	}
	pc = binary.LittleEndian.Uint64(saved[offRIP:])
	var orig [2]byte
	if n, err := readRaw(h.p, pc, orig[:]); n != 2 {
		return 0, 0, 0, fmt.Errorf("inject syscall: code at %#x: %w", pc, err)
	}
	if err := h.writeRaw(pc, syscallInsn); err != nil {
		return 0, 0, 0, err
	}
	defer h.writeRaw(pc, orig[:])
	regs := saved
	put := func(off int, v uint64) { binary.LittleEndian.PutUint64(regs[off:], v) }
	put(offRAX, uint64(nr))
	put(offOrigRAX, math.MaxUint64)
	for i, off := range []int{offRDI, offRSI, offRDX, offR10, offR8, offR9} {
		if i < len(args) {
			put(off, args[i])
		}
	}
	// Trap flag off (a thread stopped mid-step); the kernel keeps RF as it likes.
	put(offEFLAGS, binary.LittleEndian.Uint64(regs[offEFLAGS:])&^eflagsTF)
	if err := setRegSet(th.tid, ntPRStatus, regs[:]); err != nil {
		return 0, 0, 0, fmt.Errorf("inject syscall: set registers of thread %d: %w", th.tid, err)
	}
	// The trap flag off in what is put back: stepping the syscall instruction
	// can leave the kernel taking TF for the program's own, and a thread
	// detached with it dies of SIGTRAP.
	binary.LittleEndian.PutUint64(saved[offEFLAGS:], binary.LittleEndian.Uint64(saved[offEFLAGS:])&^eflagsTF)
	defer setRegSet(th.tid, ntPRStatus, saved[:])
	after, err := h.stepOnce(th)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("inject syscall %d: %w", nr, err)
	}
	return binary.LittleEndian.Uint64(after[offRAX:]), pc, binary.LittleEndian.Uint64(after[offRIP:]), nil
}

// errThreadGone says the thread did not come back from a step as expected
// (it exited, or stopped for something else, which is handled in order).
var errThreadGone = errors.New("the thread did not stop after one instruction")

// stepOnce single-steps a stopped thread by one instruction (sonde's own
// step: the model never sees it start) and returns its registers after it.
func (h *Halted) stepOnce(th *thread) ([generalSize]byte, error) {
	var regs [generalSize]byte
	for try := 0; try < 8; try++ {
		if err := singleStep(th.tid, 0); err != nil {
			return regs, err
		}
		ws, err := h.b.waitFor(th.tid)
		if err != nil {
			return regs, err
		}
		if ws.Stopped() && int(ws)>>16 == eventStop {
			// A PTRACE_INTERRUPT left over: the step did not run yet.
			defer h.b.answeredInterrupt(th)
			continue
		}
		if !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP || int(ws)>>16 != 0 {
			h.b.deferred = append([]waitEvent{{th.tid, ws}}, h.b.deferred...)
			th.running = true // its status is handled in order
			return regs, errThreadGone
		}
		break
	}
	th.invalidateRegs()
	if n, err := getRegSet(th.tid, ntPRStatus, regs[:]); err != nil || n != generalSize {
		return regs, fmt.Errorf("registers of thread %d after a step: %v", th.tid, err)
	}
	if fl := binary.LittleEndian.Uint64(regs[offEFLAGS:]); fl&eflagsTF != 0 {
		binary.LittleEndian.PutUint64(regs[offEFLAGS:], fl&^eflagsTF)
		setRegSet(th.tid, ntPRStatus, regs[:])
	}
	return regs, nil
}

// StepOut single-steps thread tid until its PC leaves [lo, hi), at most max
// instructions, so that code there can be changed under no one. A thread
// already outside is left alone.
func (h *Halted) StepOut(tid int, lo, hi uint64, max int) error {
	th := h.b.threads[tid]
	if th == nil || th.proc != h.p || th.running {
		return fmt.Errorf("step out: thread %d is not a stopped thread of process %d", tid, h.p.pid)
	}
	for i := 0; ; i++ {
		pc := th.pc()
		if pc < lo || pc >= hi {
			return nil
		}
		if i >= max {
			return fmt.Errorf("step out: thread %d still at %#x in [%#x, %#x) after %d steps", tid, pc, lo, hi, max)
		}
		if err := th.flushRegs(); err != nil {
			return err
		}
		if _, err := h.stepOnce(th); err != nil {
			return fmt.Errorf("step out: thread %d: %w", tid, err)
		}
	}
}

// ReadRaw reads memory as it is (breakpoints' int3 bytes included).
func (h *Halted) ReadRaw(addr uint64, buf []byte) (int, error) {
	return readRaw(h.p.memOwner, addr, buf)
}

// Read reads memory as the program sees it (breakpoints hidden).
func (h *Halted) Read(addr uint64, buf []byte) (int, error) {
	return h.b.readMemory(h.p, addr, buf)
}

// WriteText writes code at addr as the program is to see it: under a
// software breakpoint the breakpoint's saved byte changes and the int3 stays
// (so that removing either, in any order, leaves the right bytes). Memory
// images handed out are told.
func (h *Halted) WriteText(addr uint64, data []byte) error {
	owner := h.p.memOwner
	owner.memMu.Lock()
	buf := owner.shadow.Write(addr, data, owner.imagesSetOriginal)
	owner.memMu.Unlock()
	return h.writeRaw(addr, buf)
}

func (h *Halted) writeRaw(addr uint64, data []byte) error {
	owner := h.p.memOwner
	owner.memMu.Lock()
	defer owner.memMu.Unlock()
	if owner.mem == nil {
		return memoryError(addr, 0, unix.ESRCH)
	}
	if addr > math.MaxInt64 || addr+uint64(len(data)) > math.MaxInt64 {
		return memoryError(addr, 0, unix.EIO)
	}
	owner.imagesWritten(addr, uint64(len(data)))
	if n, err := owner.mem.WriteAt(data, int64(addr)); err != nil || n < len(data) {
		if err == nil {
			err = unix.EIO
		}
		return memoryError(addr, n, err)
	}
	return nil
}

// WriteData writes memory (no breakpoint bookkeeping: for data sonde owns,
// such as a code cache).
func (h *Halted) WriteData(addr uint64, data []byte) error { return h.writeRaw(addr, data) }

// generated is code sonde generated in a process (probes' code caches),
// where no stop may be reported: a thread stopped there is stepped out to
// application code first.
type generated struct {
	mu     sync.Mutex
	next   int
	ranges map[int]genRange
}

type genRange struct {
	pid    int
	lo, hi uint64
}

var generatedByBackend sync.Map // *Backend -> *generated

// AddGenerated registers [lo, hi) in process pid as code sonde generated: a
// thread that stops there for a suspend or an asynchronous signal is
// single-stepped (at most 64 instructions) until it is back in the
// application before the stop is reported, so that no client ever sees a
// pc of sonde's code. remove unregisters it.
func (b *Backend) AddGenerated(pid int, lo, hi uint64) (remove func()) {
	v, _ := generatedByBackend.LoadOrStore(b, &generated{ranges: map[int]genRange{}})
	g := v.(*generated)
	g.mu.Lock()
	id := g.next
	g.next++
	g.ranges[id] = genRange{pid, lo, hi}
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		delete(g.ranges, id)
		g.mu.Unlock()
	}
}

// inGenerated returns the generated range th's PC is in.
func (b *Backend) inGenerated(th *thread) (lo, hi uint64, ok bool) {
	v, found := generatedByBackend.Load(b)
	if !found {
		return 0, 0, false
	}
	g := v.(*generated)
	pc := th.pc()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.ranges {
		if r.pid == th.proc.memOwner.pid && pc >= r.lo && pc < r.hi {
			return r.lo, r.hi, true
		}
	}
	return 0, 0, false
}

// coalesceSignal drops the stop that interrupted a step of th out of
// generated code when it is the delivery of the standard signal th is
// already stopped for (a profiling or interval timer firing faster than
// the steps: SIGALRM every 200 µs over a probe hit millions of times): the
// kernel too keeps one instance of a pending standard signal, and the one
// held is delivered when th resumes. Reporting th inside the cache instead
// resumed it at an application pc the patch covers (python3 died of
// SIGSEGV, a counter counted a hit twice). Real-time signals queue: never
// dropped.
func (b *Backend) coalesceSignal(th *thread, reason *target.SuspendReason) bool {
	if reason.Kind != target.ReasonSignal || reason.Signal <= 0 || int(reason.Signal) >= 32 || len(b.deferred) == 0 {
		return false
	}
	ev := b.deferred[0]
	if ev.tid != th.tid || !ev.status.Stopped() || int(ev.status)>>16 != 0 || int(ev.status.StopSignal()) != int(reason.Signal) {
		return false
	}
	b.deferred = b.deferred[1:]
	th.running = false // in the signal-delivery-stop: the next step suppresses it
	return true
}

// leaveGenerated steps a thread about to be reported stopped (suspended, or
// stopped by an asynchronous signal, which stays pending) out of generated
// code. A fault there is reported where it happened.
func (b *Backend) leaveGenerated(th *thread, reason *target.SuspendReason) {
	if reason.Kind != target.ReasonUser && reason.Kind != target.ReasonSignal {
		return
	}
	lo, hi, ok := b.inGenerated(th)
	if !ok {
		return
	}
	h := &Halted{b: b, p: th.proc}
	for i := 0; i < 64; i++ {
		if err := th.flushRegs(); err != nil {
			return
		}
		if _, err := h.stepOnce(th); err != nil {
			if b.coalesceSignal(th, reason) {
				continue // the same signal again: one delivery, as untraced
			}
			// Stopped for something else (its status is handled next) or
			// gone: report it where it is.
			th.running = false
			return
		}
		if pc := th.pc(); pc < lo || pc >= hi {
			return
		}
	}
}
