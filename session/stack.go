package session

import (
	"sync"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/unwind"
)

// threadCallbacks are the unwinder's copy-in and lookup-ip callbacks for one
// thread of a target (live or core): memory through the target, registers from
// the thread's snapshot, modules and symbols from the session.
type threadCallbacks struct {
	s      *Session
	thread *target.Context
	regs   *target.Registers
	mods   modules.List
	st     *procState

	// A read-ahead window over target memory: the engine reads the stack in
	// small blocks, and each target read is a system call for a live
	// process. Valid for one stop (reset before every walk).
	sp0     uint64 // frame 0's stack pointer
	winAddr uint64
	win     []byte
	winBuf  [readAhead]byte
	// stackEnd is where a window of this thread last ran into unmapped
	// memory (0: nowhere yet); kept from walk to walk.
	stackEnd uint64
	// and one page of other memory (code).
	pageAddr uint64
	page     []byte
	pageBuf  [pageSize]byte

	frames []symbols.Frame // AppendSymbolInfo's buffer

	// Executable regions of the memory map, read when the walk first asks
	// about an address in no module (jit.go).
	exec       []target.MemoryRegion
	execLoaded bool

	reads, short int // target reads in this walk, and those that came up short (for tests)

	// The symbol file of the module last symbolized in this walk: frames
	// come in runs of one module, and finding a module's file (a stat
	// cache, two maps, two locks) cost more than symbolizing its pc.
	binMod *modules.Module
	bin    *symbols.Binary
	binErr error
}

// binary is Session.Binary, remembered for the module of the last frame.
func (c *threadCallbacks) binary(m *modules.Module) (*symbols.Binary, error) {
	if m != c.binMod {
		c.bin, c.binErr = c.s.Binary(m)
		c.binMod = m
	}
	return c.bin, c.binErr
}

const pageSize = 4096

// readAhead is how much target memory one window read fetches: a few pages
// of stack cover dozens of frames.
const readAhead = 16 << 10

// maxStackReadAhead bounds how far above frame 0's stack pointer reads are
// taken as stack reads.
const maxStackReadAhead = 8 << 20

// readTarget is one read of target memory (a system call for a live process).
func (c *threadCallbacks) readTarget(addr uint64, buf []byte) (int, error) {
	c.reads++
	n, err := c.thread.ReadMemory(addr, buf)
	if n < len(buf) {
		c.short++
	}
	return n, err
}

func (c *threadCallbacks) ReadMemory(buf []byte, addr uint64) (int, error) {
	if off := addr - c.winAddr; addr >= c.winAddr && off+uint64(len(buf)) <= uint64(len(c.win)) {
		return copy(buf, c.win[off:]), nil
	}
	if off := addr - c.pageAddr; addr >= c.pageAddr && off+uint64(len(buf)) <= uint64(len(c.page)) {
		return copy(buf, c.page[off:]), nil
	}
	if len(buf) > readAhead/2 {
		return c.readTarget(addr, buf)
	}
	if !c.nearStack(addr) {
		// Code bytes (the engine's checks at return addresses): one page
		// at a time; a recursion revisits the same page.
		start := addr &^ (pageSize - 1)
		if addr+uint64(len(buf)) > start+pageSize {
			return c.readTarget(addr, buf)
		}
		n, _ := c.readTarget(start, c.pageBuf[:])
		if uint64(n) < addr-start+uint64(len(buf)) {
			c.page = nil
			return c.readTarget(addr, buf)
		}
		c.pageAddr, c.page = start, c.pageBuf[:n]
		return copy(buf, c.page[addr-start:]), nil
	}
	start := addr &^ 511
	size := uint64(readAhead)
	if end := c.stackEnd; end > start && end-start < size {
		if addr+uint64(len(buf)) > end {
			// Past the end the last window met: ask for just this.
			n, err := c.readTarget(addr, buf)
			if n == len(buf) {
				c.stackEnd = 0 // the stack is not where it was
			}
			return n, err
		}
		size = end - start
	}
	n, _ := c.readTarget(start, c.winBuf[:size])
	if uint64(n) < size {
		// The window ran into unmapped memory: the top of the stack. A read
		// that meets it costs several times a whole one (33 µs for 16 KB
		// against 8 µs for 4 KB, on a 2-vCPU VM after a stop), so later
		// windows of this thread end there.
		c.stackEnd = start + uint64(n)
	}
	if uint64(n) < addr-start+uint64(len(buf)) {
		// The window ends before the request does (unmapped memory
		// follows): let the target say how much is readable.
		c.win = nil
		return c.readTarget(addr, buf)
	}
	c.winAddr, c.win = start, c.winBuf[:n]
	return copy(buf, c.win[addr-start:]), nil
}

// nearStack reports whether addr is taken for stack memory: from 512 bytes
// below frame 0's stack pointer (the red zone, and the unwinder's aligned
// blocks start up to 511 bytes below what it asks for) to maxStackReadAhead
// above it.
func (c *threadCallbacks) nearStack(addr uint64) bool {
	if addr < c.sp0 {
		return c.sp0-addr <= 512
	}
	return addr-c.sp0 < maxStackReadAhead
}

func (c *threadCallbacks) ReadRegister(reg int) (uint64, bool) {
	if reg < 0 || reg > arch.DwarfRIP {
		return 0, false
	}
	v, err := c.regs.DWARF(reg)
	return v, err == nil
}

func (c *threadCallbacks) LookupModule(pc uint64) (*unwind.Module, error) {
	m := c.mods.ForAddress(pc)
	if m == nil {
		return nil, nil
	}
	c.st.mu.Lock()
	um := c.st.engine[m]
	c.st.mu.Unlock()
	if um != nil {
		return um, nil
	}
	// The engine caches lookups by [Start, End): give it the module's
	// mappings around pc without a hole. A module mapped in pieces (node
	// maps its builtins again far from its text) must not claim the
	// anonymous memory between them, where JIT code lives.
	start, end := contiguousRun(m, pc)
	um = &unwind.Module{Name: m.Name, Start: start, End: end, Bias: m.Bias, Client: m}
	if f, err := c.s.file(m); err == nil && f.binary != nil {
		um.SetTables(f.tables)
	}
	c.st.mu.Lock()
	if prev := c.st.engine[m]; prev != nil {
		um = prev
	} else {
		c.st.engine[m] = um
	}
	c.st.mu.Unlock()
	return um, nil
}

func (c *threadCallbacks) SymbolInfo(um *unwind.Module, pc uint64) ([]unwind.Symbol, error) {
	return c.AppendSymbolInfo(nil, um, pc)
}

// AppendSymbolInfo implements unwind.SymbolAppender: Backtrace reuses dst,
// and the symbol table's frames go through a buffer kept for the thread.
func (c *threadCallbacks) AppendSymbolInfo(dst []unwind.Symbol, um *unwind.Module, pc uint64) ([]unwind.Symbol, error) {
	if um == nil {
		return c.appendJIT(dst, pc), nil
	}
	m, _ := um.Client.(*modules.Module)
	if m == nil {
		return dst, nil
	}
	b, err := c.binary(m)
	if b == nil {
		return dst, err
	}
	c.frames, err = b.AppendFrames(c.frames[:0], pc-m.Bias)
	for _, f := range c.frames {
		sym := unwind.Symbol{Function: f.Function, LinkageName: f.LinkageName, File: f.File, Line: f.Line, Column: f.Column, DeclLine: f.DeclLine}
		if f.Start != 0 {
			sym.FuncStart = f.Start + m.Bias
		}
		dst = append(dst, sym)
	}
	clear(c.frames[:cap(c.frames)]) // the buffer outlives the walk: hold no strings
	return dst, err
}

// threadUnwind is a thread's unwinder and callbacks, kept between walks so
// that warm walks allocate nothing and reuse the engine's caches.
type threadUnwind struct {
	mu sync.Mutex
	cb threadCallbacks
	u  *unwind.Unwinder
	// mods is the module list of the last walk: the unwinder replays the
	// frames a walk shares with the last one (unwind.Options.ReuseFrames),
	// which holds only while the modules are the same.
	mods modules.List
	// The last walk (see StackOf): its backtrace, the registers and modules
	// it started from, its physical frames (a buffer kept from walk to walk)
	// and, once made, its Stack.
	lastTrace unwind.Trace
	lastRegs  *target.Registers
	lastMods  modules.List
	phys      []unwind.Frame
	last      *Stack
}

var threadExt = target.NewExtension[threadUnwind]()

// withUnwinder runs fn with the thread's unwinder positioned at frame 0 of
// its current stop.
func (s *Session) withUnwinder(thread *target.Context, regs *target.Registers, fn func(u *unwind.Unwinder) error) error {
	if regs == nil {
		var err error
		if regs, err = thread.GeneralRegisters(); err != nil {
			return err
		}
	}
	mods, err := s.Modules(thread)
	if err != nil {
		return err
	}
	tu := threadExt.Get(thread)
	tu.mu.Lock()
	defer tu.mu.Unlock()
	cb := &tu.cb
	cb.s, cb.thread, cb.regs, cb.mods, cb.st = s, thread, regs, mods, procExt.Get(thread.Process())
	cb.win, cb.page, cb.sp0, cb.reads, cb.short = nil, nil, regs.SP(), 0, 0
	cb.binMod, cb.bin, cb.binErr = nil, nil, nil
	cb.execLoaded = false
	if tu.u == nil {
		tu.u = unwind.New(cb, cb, &unwind.Options{ReuseFrames: true})
	}
	if !sameList(mods, tu.mods) {
		tu.u.Forget()
		tu.mods = mods
	}
	if err := tu.u.Init(); err != nil {
		return err
	}
	return fn(tu.u)
}

// sameList reports whether a and b are the same list (not equal lists: a
// list found again has new modules, and the unwinder new modules for them).
func sameList(a, b modules.List) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// StackOptions select what Backtrace returns.
type StackOptions struct {
	NoInline  bool // one frame per physical frame
	NoSymbols bool // pcs only
	// NoTailCalls leaves out the frames of functions that tail-called the
	// frame below them, which gdb rebuilds from call-site DWARF (tailcall.go).
	NoTailCalls bool
	// Registers, when set, are the thread's registers at this stop, already
	// read by the caller (saves reading them again from the target).
	Registers *target.Registers
}

// Backtrace unwinds a stopped thread's stack, with inline frames and symbols.
// It is Stack's backtrace: StackOf finds the frames with their registers
// of the same walk.
func (s *Session) Backtrace(thread *target.Context, opts StackOptions) (unwind.Trace, error) {
	var t unwind.Trace
	err := s.withUnwinder(thread, opts.Registers, func(u *unwind.Unwinder) error {
		t = s.walkStack(thread, threadExt.Get(thread), u, opts)
		return nil
	})
	return t, err
}

// Walk unwinds a stopped thread's physical frames (pcs, stack pointers and
// CFAs; no symbols), appending them to dst: the cheap walk for profilers and
// for callers that symbolize later or not at all. With a dst that has room
// it allocates nothing.
func (s *Session) Walk(thread *target.Context, dst []unwind.Frame) ([]unwind.Frame, unwind.StopReason, error) {
	var stop unwind.StopReason
	err := s.withUnwinder(thread, nil, func(u *unwind.Unwinder) error {
		dst, stop = u.Walk(dst)
		return u.Err()
	})
	return dst, stop, err
}

// FrameCFA returns the canonical frame address of a stopped thread's frame 0
// (for the step advisor: frame identity).
func (s *Session) FrameCFA(thread *target.Context) (uint64, error) {
	var cfa uint64
	err := s.withUnwinder(thread, nil, func(u *unwind.Unwinder) error {
		if cfa = u.Frame().CFA; cfa != 0 {
			return nil
		}
		if err := u.Err(); err != nil {
			return err
		}
		return target.Errorf(target.CodeOther, "frame address", thread.ID(), errNoCaller)
	})
	return cfa, err
}

// Caller returns the return address of a stopped thread's frame 0 and that
// frame's CFA.
func (s *Session) Caller(thread *target.Context) (returnAddress, cfa uint64, err error) {
	err = s.withUnwinder(thread, nil, func(u *unwind.Unwinder) error {
		if !u.Step() {
			if err := u.Err(); err != nil {
				return err
			}
			return target.Errorf(target.CodeOther, "step out", thread.ID(), errNoCaller)
		}
		f := u.Frame()
		returnAddress, cfa = f.PC, f.SP
		return nil
	})
	return returnAddress, cfa, err
}

// contiguousRun returns the bounds of the run of m's mappings, without a
// gap, that holds pc.
func contiguousRun(m *modules.Module, pc uint64) (start, end uint64) {
	rs := m.Regions
	for i, r := range rs {
		if !r.Contains(pc) {
			continue
		}
		lo, hi := i, i
		for lo > 0 && rs[lo-1].End() == rs[lo].Addr {
			lo--
		}
		for hi+1 < len(rs) && rs[hi].End() == rs[hi+1].Addr {
			hi++
		}
		return rs[lo].Addr, rs[hi].End()
	}
	return 0, 0 // unknown: the engine asks every time
}
