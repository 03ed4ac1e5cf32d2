package session

// The call-frame information at an address, for clients that unwind by
// themselves (TCF's Symbols.findFrameInfo): the CFI row, in a shape no
// protocol owns; front ends translate it into their own commands.

import (
	"errors"
	"fmt"
	"sync"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/unwind/cfi"
)

// FrameRule is the stack-tracing rule at a run-time address.
type FrameRule struct {
	// Module is the module the address is in.
	Module *Module
	// Row is the CFI row (.eh_frame, else .debug_frame) holding for the
	// address, with Start and End made run-time addresses. Register
	// numbers are DWARF's.
	Row cfi.Row
}

// FrameRuleError is a module's call-frame information that cannot be read.
type FrameRuleError struct {
	Module string
	Addr   uint64 // link-time address looked up; 0 when the tables themselves failed
	Err    error
}

func (e *FrameRuleError) Error() string {
	if e.Addr == 0 {
		return fmt.Sprintf("call-frame information of %s: %v", e.Module, e.Err)
	}
	return fmt.Sprintf("call-frame information of %s at 0x%x: %v", e.Module, e.Addr, e.Err)
}

func (e *FrameRuleError) Unwrap() error { return e.Err }

// cfiTables are a symbol file's CFI tables, made on first use.
type cfiTables struct {
	once      sync.Once
	eh, debug *cfi.Table
	err       error
}

// FrameRule returns the stack-tracing rule at a run-time address of c's
// process; nil, without an error, when no CFI covers it (no module, no
// symbol file, no FDE: the client falls back to its own heuristics).
func (s *Session) FrameRule(c *target.Context, addr uint64) (*FrameRule, error) {
	mods, err := s.Modules(c)
	if err != nil {
		return nil, err
	}
	m := mods.ForAddress(addr)
	if m == nil {
		return nil, nil
	}
	f, err := s.file(m)
	if err != nil || f.binary == nil {
		return nil, nil // no symbol file: no CFI to offer
	}
	tabs := &f.cfi
	tabs.once.Do(func() {
		secs, err := f.binary.UnwindSections()
		if err != nil {
			tabs.err = err
			return
		}
		if len(secs.EhFrame.Data) > 0 {
			tabs.eh = cfi.NewEHFrame(secs.EhFrame.Data, cfi.Options{Addr: secs.EhFrame.Addr, Hdr: secs.EhFrameHdr.Data, HdrAddr: secs.EhFrameHdr.Addr})
		}
		if len(secs.DebugFrame.Data) > 0 {
			tabs.debug = cfi.NewDebugFrame(secs.DebugFrame.Data, cfi.Options{Addr: secs.DebugFrame.Addr})
		}
	})
	if tabs.err != nil {
		return nil, &FrameRuleError{Module: m.Name, Err: tabs.err}
	}
	fr := &FrameRule{Module: m}
	lpc := addr - m.Bias
	err = cfi.ErrNoFDE
	if tabs.eh != nil {
		err = tabs.eh.RowFor(lpc, &fr.Row)
	}
	if err != nil && tabs.debug != nil {
		err = tabs.debug.RowFor(lpc, &fr.Row)
	}
	if err != nil {
		if errors.Is(err, cfi.ErrNoFDE) {
			return nil, nil
		}
		return nil, &FrameRuleError{Module: m.Name, Addr: lpc, Err: err}
	}
	fr.Row.Start += m.Bias
	fr.Row.End += m.Bias
	return fr, nil
}
