package session

import (
	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/modules"
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
}

func (c *threadCallbacks) ReadMemory(buf []byte, addr uint64) (int, error) {
	return c.thread.ReadMemory(addr, buf)
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
	um = &unwind.Module{Name: m.Name, Start: m.Start, End: m.End, Bias: m.Bias, Client: m}
	if f, err := c.s.file(m); err == nil && f.binary != nil {
		um.SetSources(f.sources)
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
	if um == nil {
		return nil, nil
	}
	m, _ := um.Client.(*modules.Module)
	if m == nil {
		return nil, nil
	}
	b, err := c.s.Binary(m)
	if b == nil {
		return nil, err
	}
	frames, err := b.Lookup(pc - m.Bias)
	out := make([]unwind.Symbol, 0, len(frames))
	for _, f := range frames {
		sym := unwind.Symbol{Function: f.Function, LinkageName: f.LinkageName, File: f.File, Line: f.Line, Column: f.Column}
		if f.Start != 0 {
			sym.FuncStart = f.Start + m.Bias
		}
		out = append(out, sym)
	}
	return out, err
}

// unwinder prepares an unwinder positioned at a stopped thread's frame 0.
func (s *Session) unwinder(thread *target.Context) (*unwind.Unwinder, error) {
	regs, err := thread.Registers()
	if err != nil {
		return nil, err
	}
	mods, err := s.Modules(thread)
	if err != nil {
		return nil, err
	}
	cb := &threadCallbacks{s: s, thread: thread, regs: regs, mods: mods, st: procExt.Get(thread.Process())}
	u := unwind.New(cb, cb, nil)
	if err := u.Init(); err != nil {
		return nil, err
	}
	return u, nil
}

// StackOptions select what Backtrace returns.
type StackOptions struct {
	NoInline  bool // one frame per physical frame
	NoSymbols bool // pcs only
}

// Backtrace unwinds a stopped thread's stack, with inline frames and symbols.
func (s *Session) Backtrace(thread *target.Context, opts StackOptions) (unwind.Trace, error) {
	u, err := s.unwinder(thread)
	if err != nil {
		return unwind.Trace{}, err
	}
	return u.Backtrace(unwind.BacktraceOptions{NoInline: opts.NoInline, NoSymbols: opts.NoSymbols}), nil
}

// FrameCFA returns the canonical frame address of a stopped thread's frame 0
// (for the step advisor: frame identity).
func (s *Session) FrameCFA(thread *target.Context) (uint64, error) {
	u, err := s.unwinder(thread)
	if err != nil {
		return 0, err
	}
	if cfa := u.Frame().CFA; cfa != 0 {
		return cfa, nil
	}
	if err := u.Err(); err != nil {
		return 0, err
	}
	return 0, target.Errorf(target.CodeOther, "frame address", thread.ID(), errNoCaller)
}

// Caller returns the return address of a stopped thread's frame 0 and that
// frame's CFA.
func (s *Session) Caller(thread *target.Context) (returnAddress, cfa uint64, err error) {
	u, err := s.unwinder(thread)
	if err != nil {
		return 0, 0, err
	}
	if !u.Step() {
		if err := u.Err(); err != nil {
			return 0, 0, err
		}
		return 0, 0, target.Errorf(target.CodeOther, "step out", thread.ID(), errNoCaller)
	}
	f := u.Frame()
	return f.PC, f.SP, nil
}
