// Package targetframe gives the stack frames of a stopped thread of a
// sonde target (live or core) as variables.Frame values: memory through the
// target, registers of frame 0 from the thread (including vector registers)
// and of caller frames from an unwind of the stack, the module and symbol
// Reader of each frame from a session, and the thread-local storage of any
// module of the process (see TLSAddress and package tls).
//
// It sits above package variables (which knows no target) so that front
// ends and tests share one implementation.
package targetframe

import (
	"debug/elf"

	"fmt"
	"github.com/sondedbg/sonde/symbols/elfsym"
	"sync"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/unwind"
	"github.com/sondedbg/sonde/variables"
)

// Binaries is what a Stack needs to know about a process's code: its
// modules and their symbol files. *session.Session implements it.
type Binaries interface {
	Modules(c *target.Context) (modules.List, error)
	Binary(m *modules.Module) (*symbols.Binary, error)
}

// MaxFrames bounds an unwind.
const MaxFrames = 1024

// Stack is the physical frames of one stopped thread.
type Stack struct {
	thread *target.Context
	sess   Binaries
	regs   *target.Registers
	mods   modules.List
	frames []*Frame
	tls    tlsState
	// pages, when not nil, caches target memory by page for the stack's
	// life (a stopped thread read many times over: see FrameVariables).
	pages *pageCache
	// entries, when not nil, remembers entry values (see FrameVariables).
	entries *variables.EntryCache
}

// Frame is one physical frame; it implements variables.Frame and
// variables.Writer.
type Frame struct {
	stack *Stack
	index int
	pc    uint64
	sp    uint64
	cfa   uint64
	exact bool
	regs  unwind.Registers
	mod   *modules.Module
}

// Unwind walks the stack of a stopped thread, reading modules and symbol
// files through s (a *session.Session).
func Unwind(s Binaries, thread *target.Context) (*Stack, error) {
	return unwindStack(s, thread, nil)
}

// unwindStack is Unwind, reading memory through pages when not nil.
func unwindStack(s Binaries, thread *target.Context, pages *pageCache) (*Stack, error) {
	regs, err := thread.Registers()
	if err != nil {
		return nil, err
	}
	mods, err := s.Modules(thread)
	if err != nil {
		return nil, err
	}
	st := &Stack{thread: thread, sess: s, regs: regs, mods: mods, pages: pages}
	cb := &callbacks{st: st}
	u := unwind.New(cb, cb, &unwind.Options{MaxDepth: MaxFrames})
	if err := u.Init(); err != nil {
		return nil, err
	}
	for i := 0; i < MaxFrames; i++ {
		uf := u.Frame()
		f := &Frame{stack: st, index: i, pc: uf.PC, sp: uf.SP, cfa: uf.CFA, exact: uf.Exact, regs: uf.Regs}
		f.mod = mods.ForAddress(f.lookupPC())
		st.frames = append(st.frames, f)
		if !u.Step() {
			break
		}
		if f.cfa == 0 {
			f.cfa = u.Frame().SP
		}
	}
	return st, nil
}

// Truncate drops the frames from physical index n on: the frames a
// backtrace does not show (gdb's stops at main) are no callers for entry
// values, as in gdb.
func (s *Stack) Truncate(n int) {
	if n >= 0 && n < len(s.frames) {
		s.frames = s.frames[:n]
	}
}

// EntryCache implements variables.EntryCacher (nil: no cache).
func (f *Frame) EntryCache() *variables.EntryCache { return f.stack.entries }

// Thread returns the thread the stack belongs to.
func (s *Stack) Thread() *target.Context { return s.thread }

// Len returns the number of physical frames.
func (s *Stack) Len() int { return len(s.frames) }

// Frame returns physical frame i (0 innermost), nil past the end.
func (s *Stack) Frame(i int) *Frame {
	if i < 0 || i >= len(s.frames) {
		return nil
	}
	return s.frames[i]
}

// FrameAt returns the physical frame whose pc is pc and whose CFA is cfa
// (0 matches any), so frames of another unwind (the StackTrace service's)
// map onto this one.
func (s *Stack) FrameAt(pc, cfa uint64) *Frame {
	for _, f := range s.frames {
		if f.pc == pc && (cfa == 0 || f.cfa == 0 || f.cfa == cfa) {
			return f
		}
	}
	return nil
}

func (f *Frame) lookupPC() uint64 {
	if f.exact || f.pc == 0 {
		return f.pc
	}
	return f.pc - 1
}

// Index returns the frame's physical index (0 innermost).
func (f *Frame) Index() int { return f.index }

// Module returns the module of the frame's code (nil when in none).
func (f *Frame) Module() *modules.Module { return f.mod }

// Binary returns the symbol file of the frame's module.
func (f *Frame) Binary() (*symbols.Binary, error) {
	if f.mod == nil {
		return nil, fmt.Errorf("targetframe: pc %#x is in no module", f.pc)
	}
	b, err := f.stack.sess.Binary(f.mod)
	if b == nil && err == nil {
		err = fmt.Errorf("targetframe: no symbol file for %s", f.mod.Name)
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
	fns, err := b.LookupFunction(name)
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
	for f.index > 0 {
		if _, ok := f.regs.Get(reg); ok {
			break
		}
		f = f.stack.frames[f.index-1]
	}
	if f.index == 0 {
		r := f.stack.regs.Arch.ByDWARF(reg)
		if r == nil {
			return nil, fmt.Errorf("targetframe: no DWARF register %d", reg)
		}
		return f.stack.regs.Get(r)
	}
	v, _ := f.regs.Get(reg)
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return b, nil
}

// PC returns the frame's pc (return address for callers).
func (f *Frame) PC() uint64 { return f.pc }

// SP returns the frame's stack pointer.
func (f *Frame) SP() uint64 { return f.sp }

// Exact reports whether PC is exact.
func (f *Frame) Exact() bool { return f.exact }

// CFA returns the canonical frame address.
func (f *Frame) CFA() (uint64, error) {
	if f.cfa == 0 {
		return 0, fmt.Errorf("targetframe: CFA of frame %d is unknown", f.index)
	}
	return f.cfa, nil
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
	c := f.stack.Frame(f.index + 1)
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
		err = fmt.Errorf("targetframe: wrote %d of %d bytes at %#x", n, len(data), addr)
	}
	return err
}

// WriteRegister writes a register of frame 0 (caller frames' registers are
// saved copies: writing them is not supported).
func (f *Frame) WriteRegister(reg int, data []byte) error {
	if f.index != 0 {
		return target.Errorf(target.CodeUnsupported, "write a register of a caller frame", f.stack.thread.ID(), nil)
	}
	r := f.stack.regs.Arch.ByDWARF(reg)
	if r == nil {
		return fmt.Errorf("targetframe: no DWARF register %d", reg)
	}
	if err := f.stack.thread.WriteRegister(r, 0, data); err != nil {
		return err
	}
	return f.stack.regs.Set(r, 0, data)
}

// callbacks are the unwinder's copy-in and lookup-ip callbacks.
type callbacks struct {
	st *Stack
	mu sync.Mutex
	um map[*modules.Module]*unwind.Module
}

func (c *callbacks) ReadMemory(buf []byte, addr uint64) (int, error) {
	return c.st.read(buf, addr)
}

func (c *callbacks) ReadRegister(reg int) (uint64, bool) {
	if reg < 0 || reg > arch.DwarfRIP {
		return 0, false
	}
	v, err := c.st.regs.DWARF(reg)
	return v, err == nil
}

// sources caches the unwind sections of each binary.
var sources sync.Map // *symbols.Binary -> unwind.Sources

func sourcesOf(b *symbols.Binary) unwind.Sources {
	if v, ok := sources.Load(b); ok {
		return v.(unwind.Sources)
	}
	s, _ := unwind.ReadSources(b.ELF())
	if len(s.DebugFrame.Data) == 0 {
		if d := b.DWARFELF(); d != nil && d != b.ELF() {
			if ds, err := unwind.ReadSources(d); err == nil {
				s.DebugFrame = ds.DebugFrame
			}
		}
	}
	sources.Store(b, s)
	return s
}

func (c *callbacks) LookupModule(pc uint64) (*unwind.Module, error) {
	m := c.st.mods.ForAddress(pc)
	if m == nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.um == nil {
		c.um = map[*modules.Module]*unwind.Module{}
	}
	if um := c.um[m]; um != nil {
		return um, nil
	}
	um := &unwind.Module{Name: m.Name, Start: m.Start, End: m.End, Bias: m.Bias, Client: m}
	if b, _ := c.st.sess.Binary(m); b != nil {
		um.SetSources(sourcesOf(b))
	}
	c.um[m] = um
	return um, nil
}

func (c *callbacks) SymbolInfo(*unwind.Module, uint64) ([]unwind.Symbol, error) { return nil, nil }

// SymbolAddresses returns the run-time addresses of the functions an ELF
// symbol names in the process (variables.SymbolFrame): those of the first
// module, in the modules' order, with a global (else weak, else local)
// function symbol of that name, as gdb's minimal-symbol lookup finds them.
// A versioned symbol may name several (pthread_cond_wait@@GLIBC_2.3.2 and
// its compatibility version): all are returned. A call site that only
// declares the function it calls is resolved through it.
func (f *Frame) SymbolAddresses(name string) []uint64 {
	var best []uint64
	bestRank := 3
	for _, m := range f.stack.mods {
		if m.VDSO {
			continue // no call site names its functions; its symbol file would be looked for
		}
		b, _ := f.stack.sess.Binary(m)
		if b == nil {
			continue
		}
		t, err := b.Symbols()
		if t == nil || err != nil {
			continue
		}
		for _, s := range t.ByName(name) {
			if s.Kind != elfsym.KindFunc && s.Kind != elfsym.KindIFunc || s.Addr == 0 {
				continue
			}
			rank := 2
			switch s.Bind {
			case elf.STB_GLOBAL:
				rank = 0
			case elf.STB_WEAK:
				rank = 1
			}
			if rank < bestRank {
				best, bestRank = best[:0], rank
			}
			if rank == bestRank {
				best = append(best, s.Addr+m.Bias)
			}
		}
		if bestRank == 0 {
			break
		}
	}
	return best
}

// read reads target memory, through the page cache when the stack has one.
func (s *Stack) read(buf []byte, addr uint64) (int, error) {
	if s.pages == nil {
		return s.thread.ReadMemory(addr, buf)
	}
	return s.pages.read(s.thread, buf, addr)
}

// pageCache keeps the pages of target memory read while a thread is
// stopped: unwinding and reading variables ask for a few bytes at a time,
// and each read of a live process is a request to its tracer thread.
type pageCache struct {
	mu    sync.Mutex
	pages map[uint64][]byte // page address -> its bytes (short: unreadable after)
}

const cachePage = 4096

// maxCachedPages bounds the cache (variables may point anywhere).
const maxCachedPages = 1024

func newPageCache() *pageCache { return &pageCache{pages: map[uint64][]byte{}} }

func (c *pageCache) read(thread *target.Context, buf []byte, addr uint64) (int, error) {
	if len(buf) > cachePage {
		return thread.ReadMemory(addr, buf)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for n < len(buf) {
		a := addr + uint64(n)
		page := a &^ (cachePage - 1)
		b, ok := c.pages[page]
		if !ok {
			if len(c.pages) >= maxCachedPages {
				clear(c.pages)
			}
			full := make([]byte, cachePage)
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
