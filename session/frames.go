package session

// The frames of a stopped thread with their registers: one walk of the
// stack gives both the backtrace a front end shows (inline and tail-call
// frames, symbols) and the physical frames whose registers variables and
// expressions are read from. Front ends (the StackTrace and Expressions
// services, `sonde stack`'s arguments, the DAP server) all use this walk.

import (
	"fmt"
	"sync"

	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/unwind"
	"github.com/sondedbg/sonde/variables"
)

// Stack is one walk of a stopped thread's stack: its backtrace and its
// physical frames, each carrying every register the unwinder recovered, its
// CFA, module and symbol reader. A Stack describes one stop: once the thread
// runs, walk again.
type Stack struct {
	sess   *Session
	thread *target.Context
	trace  unwind.Trace
	frames []Frame
	mods   modules.List
	// regs are frame 0's registers as the walk started from them (often
	// the general registers only); full, read on demand, are all of them.
	regs     *target.Registers
	fullOnce sync.Once
	full     *target.Registers
	fullErr  error
	tls      tlsState
	// pages, when not nil, caches target memory by page for the stack's
	// life (a stopped thread read many times over: see FrameVariables).
	pages *pageCache
	// entries, when not nil, remembers entry values (see FrameVariables).
	entries *variables.EntryCache
	// tails are the tail-call frames after each physical frame
	// (tailframes.go).
	tailOnce sync.Once
	tails    map[int]*Frame
}

// Frame is one physical frame of a Stack. It implements variables.Frame,
// variables.Writer, variables.TLSFrame, variables.SymbolFrame and
// variables.EntryCacher.
type Frame struct {
	stack *Stack
	index int
	uf    unwind.Frame
	mod   *modules.Module
	// A tail-call frame (tailframes.go): index is the physical frame
	// below it, trace its backtrace index, next the frame above it in
	// the chain.
	tail  bool
	trace int
	next  *Frame
}

// Stack walks a stopped thread's stack once, for its backtrace and its
// frames with registers.
func (s *Session) Stack(thread *target.Context, opts StackOptions) (*Stack, error) {
	var st *Stack
	err := s.withUnwinder(thread, opts.Registers, func(u *unwind.Unwinder) error {
		tu := threadExt.Get(thread) // withUnwinder holds its lock
		s.walkStack(thread, tu, u, opts)
		st = tu.stack(s, thread)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// walkStack walks the thread's stack into tu: the backtrace, and the
// physical frames in a buffer kept from walk to walk (a Backtrace copies
// them nowhere unless StackOf asks for them). tu.mu is held.
func (s *Session) walkStack(thread *target.Context, tu *threadUnwind, u *unwind.Unwinder, opts StackOptions) unwind.Trace {
	clear(tu.phys) // hold no modules of an older walk
	var t unwind.Trace
	t, tu.phys = u.BacktraceFrames(unwind.BacktraceOptions{NoInline: opts.NoInline, NoSymbols: opts.NoSymbols}, tu.phys[:0])
	if !opts.NoSymbols && !opts.NoInline {
		s.hideInline(thread, &t)
	}
	if !opts.NoSymbols && !opts.NoTailCalls {
		s.addTailCalls(tu.cb.mods, procExt.Get(thread.Process()), &t)
	}
	tu.lastTrace, tu.lastRegs, tu.lastMods, tu.last = t, tu.cb.regs, tu.cb.mods, nil
	return t
}

// stack makes the Stack of the thread's last walk (tu.mu held).
func (tu *threadUnwind) stack(s *Session, thread *target.Context) *Stack {
	if tu.last == nil {
		st := &Stack{sess: s, thread: thread, trace: tu.lastTrace, mods: tu.lastMods, regs: tu.lastRegs}
		st.setFrames(tu.phys)
		tu.last = st
	}
	return tu.last
}

// StackOf returns the Stack whose backtrace is trace, a backtrace of the
// thread's current stop: the thread's last walk (Backtrace or Stack) when
// trace came from it (or is its first frames), so that the frames a client
// was shown and the registers its expressions read are of one walk; a new
// walk otherwise. A trace of an earlier stop is the caller's to drop when
// the thread runs.
func (s *Session) StackOf(thread *target.Context, trace unwind.Trace) (*Stack, error) {
	tu := threadExt.Get(thread)
	tu.mu.Lock()
	if sameTrace(tu.lastTrace, trace) && tu.lastRegs != nil {
		st := tu.stack(s, thread)
		tu.mu.Unlock()
		return st, nil
	}
	tu.mu.Unlock()
	return s.Stack(thread, StackOptions{})
}

// sameTrace reports whether b is a, or its first frames (a front end cuts a
// backtrace at main).
func sameTrace(a, b unwind.Trace) bool {
	if len(b.Frames) == 0 || len(b.Frames) > len(a.Frames) {
		return false
	}
	return &a.Frames[0] == &b.Frames[0]
}

// setFrames makes the stack's frames from the walk's physical frames.
func (st *Stack) setFrames(phys []unwind.Frame) {
	st.frames = make([]Frame, len(phys))
	for i := range phys {
		f := &st.frames[i]
		f.stack, f.index, f.uf = st, i, phys[i]
		if f.uf.CFA == 0 && i+1 < len(phys) {
			// The walk found the caller without a CFA (a frame-pointer
			// or leaf step): the caller's stack pointer after the return
			// is this frame's CFA, by definition.
			f.uf.CFA = phys[i+1].SP
		}
		f.mod = st.mods.ForAddress(f.lookupPC())
	}
}

// Trace returns the stack's backtrace: gdb's frames, inline and tail-call
// frames included; StackFrame.Physical indexes Frame.
func (st *Stack) Trace() unwind.Trace { return st.trace }

// Thread returns the thread the stack belongs to.
func (st *Stack) Thread() *target.Context { return st.thread }

// Modules returns the module list the walk used.
func (st *Stack) Modules() modules.List { return st.mods }

// Len returns the number of physical frames.
func (st *Stack) Len() int { return len(st.frames) }

// Frame returns physical frame i (0 innermost), nil past the end.
func (st *Stack) Frame(i int) *Frame {
	if i < 0 || i >= len(st.frames) {
		return nil
	}
	return &st.frames[i]
}

// FrameOf returns the physical frame of the backtrace's frame i (nil when
// there is none).
func (st *Stack) FrameOf(i int) *Frame {
	if i < 0 || i >= len(st.trace.Frames) {
		return nil
	}
	return st.Frame(st.trace.Frames[i].Physical)
}

// FrameAt returns the physical frame whose pc is pc and whose CFA is cfa
// (0 matches any).
func (st *Stack) FrameAt(pc, cfa uint64) *Frame {
	for i := range st.frames {
		f := &st.frames[i]
		if f.uf.PC == pc && (cfa == 0 || f.uf.CFA == 0 || f.uf.CFA == cfa) {
			return f
		}
	}
	return nil
}

// view returns a copy of the stack's frames, the first n only (n < 0: all),
// that reads memory through a page cache and remembers entry values: what
// reading every frame's variables at once wants.
func (st *Stack) view(n int) *Stack {
	if n < 0 || n > len(st.frames) {
		n = len(st.frames)
	}
	v := &Stack{sess: st.sess, thread: st.thread, trace: st.trace, mods: st.mods, regs: st.regs,
		pages: newPageCache(), entries: variables.NewEntryCache()}
	v.frames = make([]Frame, n)
	for i := range v.frames {
		v.frames[i] = st.frames[i]
		v.frames[i].stack = v
	}
	return v
}

func (f *Frame) lookupPC() uint64 {
	if f.uf.Exact || f.uf.PC == 0 {
		return f.uf.PC
	}
	return f.uf.PC - 1
}

// Index returns the frame's physical index (0 innermost).
func (f *Frame) Index() int { return f.index }

// Stack returns the stack the frame belongs to.
func (f *Frame) Stack() *Stack { return f.stack }

// Module returns the module of the frame's code (nil when in none).
func (f *Frame) Module() *modules.Module { return f.mod }

// Unwound returns the unwinder's frame: pc, stack pointer, CFA, how its
// caller was found, and the registers recovered in it.
func (f *Frame) Unwound() unwind.Frame { return f.uf }

// EntryCache implements variables.EntryCacher (nil: no cache).
func (f *Frame) EntryCache() *variables.EntryCache { return f.stack.entries }

// Binary returns the symbol file of the frame's module.
func (f *Frame) Binary() (*symbols.Binary, error) {
	if f.mod == nil {
		return nil, fmt.Errorf("session: pc %#x is in no module", f.uf.PC)
	}
	b, err := f.stack.sess.Binary(f.mod)
	if b == nil && err == nil {
		err = fmt.Errorf("session: no symbol file for %s", f.mod.Name)
	}
	return b, err
}

// Reader returns the variables Reader of the frame's module.
func (f *Frame) Reader() (*variables.Reader, error) {
	b, err := f.Binary()
	if b == nil {
		return nil, err
	}
	return variables.For(b)
}

// FunctionAddress returns the run-time entry address of a function of the
// frame's module by name (for expr.Env.Function).
func (f *Frame) FunctionAddress(name string) (uint64, bool) {
	b, err := f.Binary()
	if b == nil || err != nil {
		return 0, false
	}
	fns, _ := b.LookupFunction(name)
	for _, fn := range fns {
		if !fn.Inlined && fn.Entry != 0 {
			return fn.Entry + f.Bias(), true
		}
	}
	return 0, false
}

// ReadMemory reads the thread's memory.
func (f *Frame) ReadMemory(buf []byte, addr uint64) (int, error) {
	return f.stack.read(buf, addr)
}

// Register returns a register of this frame: any register the thread has
// for frame 0, the registers the unwinder recovered for callers.
//
// A register the call-frame information says nothing about in a caller frame
// is taken from the next inner frame, as gdb does: compilers that allocate
// registers across functions (gcc's -fipa-ra) keep values in caller-saved
// registers over calls to functions they know leave them alone, and their
// location lists say so, while the CFI of those functions cannot.
func (f *Frame) Register(reg int) ([]byte, error) {
	if f.tail {
		return f.tailRegister(reg)
	}
	for f.index > 0 {
		if _, ok := f.uf.Regs.Get(reg); ok {
			break
		}
		f = &f.stack.frames[f.index-1]
	}
	if f.index == 0 {
		return f.stack.frame0Register(reg)
	}
	v, _ := f.uf.Regs.Get(reg)
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return b, nil
}

// frame0Register reads a register of frame 0: from the registers the walk
// started with, else (vector registers) from all of the thread's.
func (st *Stack) frame0Register(reg int) ([]byte, error) {
	r := st.regs.Arch.ByDWARF(reg)
	if r == nil {
		return nil, fmt.Errorf("session: no DWARF register %d", reg)
	}
	if st.regs.Has(r) {
		return st.regs.Get(r)
	}
	st.fullOnce.Do(func() { st.full, st.fullErr = st.thread.Registers() })
	if st.fullErr != nil {
		return nil, st.fullErr
	}
	return st.full.Get(r)
}

// PC returns the frame's pc (return address for callers).
func (f *Frame) PC() uint64 { return f.uf.PC }

// SP returns the frame's stack pointer.
func (f *Frame) SP() uint64 { return f.uf.SP }

// Exact reports whether PC is exact.
func (f *Frame) Exact() bool { return f.uf.Exact }

// CFA returns the canonical frame address.
func (f *Frame) CFA() (uint64, error) {
	if f.uf.CFA == 0 {
		return 0, fmt.Errorf("session: CFA of frame %d is unknown", f.index)
	}
	return f.uf.CFA, nil
}

// Bias returns the load bias of the frame's module.
func (f *Frame) Bias() uint64 {
	if f.mod == nil {
		return 0
	}
	return f.mod.Bias
}

// Caller returns the calling frame and its module's Reader.
func (f *Frame) Caller() (variables.Frame, *variables.Reader) {
	c := f.caller()
	if c == nil {
		return nil, nil
	}
	r, err := c.Reader()
	if err != nil {
		return nil, nil
	}
	return c, r
}

// WriteMemory writes the thread's memory.
func (f *Frame) WriteMemory(addr uint64, data []byte) error {
	f.stack.pages = nil // what was read is no longer what is there
	n, err := f.stack.thread.WriteMemory(addr, data)
	if err == nil && n < len(data) {
		err = fmt.Errorf("session: wrote %d of %d bytes at %#x", n, len(data), addr)
	}
	return err
}

// WriteRegister writes a register of frame 0 (caller frames' registers are
// saved copies: writing them is not supported).
func (f *Frame) WriteRegister(reg int, data []byte) error {
	if f.index != 0 {
		return target.Errorf(target.CodeUnsupported, "write a register of a caller frame", f.stack.thread.ID(), nil)
	}
	st := f.stack
	r := st.regs.Arch.ByDWARF(reg)
	if r == nil {
		return fmt.Errorf("session: no DWARF register %d", reg)
	}
	if err := st.thread.WriteRegister(r, 0, data); err != nil {
		return err
	}
	if st.regs.Has(r) {
		// The walk's snapshot may be the caller's (StackOptions.Registers):
		// keep it as the thread now is.
		return st.regs.Set(r, 0, data)
	}
	st.fullOnce.Do(func() { st.full, st.fullErr = st.thread.Registers() })
	if st.full != nil {
		return st.full.Set(r, 0, data)
	}
	return nil
}

// read reads target memory, through the page cache when the stack has one.
func (st *Stack) read(buf []byte, addr uint64) (int, error) {
	if st.pages == nil {
		return st.thread.ReadMemory(addr, buf)
	}
	return st.pages.read(st.thread, buf, addr)
}

// stackMemory reads a stack's thread's memory (for package tls).
type stackMemory struct{ st *Stack }

func (m stackMemory) ReadMemory(buf []byte, addr uint64) (int, error) { return m.st.read(buf, addr) }

// pageCache keeps the pages of target memory read while a thread is
// stopped: reading variables asks for a few bytes at a time, and each read
// of a live process is a request to its tracer thread.
type pageCache struct {
	mu    sync.Mutex
	pages map[uint64][]byte // page address -> its bytes (short: unreadable after)
}

// maxCachedPages bounds the cache (variables may point anywhere).
const maxCachedPages = 1024

func newPageCache() *pageCache { return &pageCache{pages: map[uint64][]byte{}} }

func (c *pageCache) read(thread *target.Context, buf []byte, addr uint64) (int, error) {
	if len(buf) > pageSize {
		return thread.ReadMemory(addr, buf)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for n < len(buf) {
		a := addr + uint64(n)
		page := a &^ (pageSize - 1)
		b, ok := c.pages[page]
		if !ok {
			if len(c.pages) >= maxCachedPages {
				clear(c.pages)
			}
			full := make([]byte, pageSize)
			got, _ := thread.ReadMemory(page, full)
			b = full[:got]
			c.pages[page] = b
		}
		off := int(a - page)
		if off >= len(b) {
			if n == 0 {
				// Unreadable: let the target say why.
				return thread.ReadMemory(addr, buf)
			}
			return n, nil
		}
		n += copy(buf[n:], b[off:])
	}
	return n, nil
}
