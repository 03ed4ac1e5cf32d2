package session

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/variables"
	"github.com/sondedbg/sonde/variables/tls"
)

// layoutFromDWARF is tls.LayoutFromDWARF; tests replace it to exercise the
// fallback for processes whose glibc has no debug information.
var layoutFromDWARF = tls.LayoutFromDWARF

// tlsState is what a Stack learns, once, to locate thread-local storage:
// the dynamic linker's link_map entry of each module and glibc's layout.
type tlsState struct {
	mu       sync.Mutex
	loaded   bool
	static   bool // no dynamic linker: a statically linked executable
	linkMaps map[*modules.Module]uint64
	layout   *tls.Layout
	modules  map[*variables.Reader]*modules.Module
	err      error
}

// TLSAddress locates thread-local storage (DW_OP_form_tls_address): the
// run-time address of offset in this thread's TLS block of the module whose
// DWARF r reads (nil: the frame's module). Static TLS (the executable,
// libraries loaded at start) and dynamic TLS (dlopen'd libraries, through
// the thread's dtv) are both found, as package tls explains; a block the
// thread has not allocated yet is reported with tls.ErrNotAllocated.
func (f *Frame) TLSAddress(r *variables.Reader, offset uint64) (uint64, error) {
	m := f.mod
	if r != nil {
		var err error
		if m, err = f.stack.moduleOf(r, f.mod); err != nil {
			return 0, err
		}
	}
	if m == nil {
		return 0, fmt.Errorf("session: pc %#x is in no module", f.uf.PC)
	}
	tm, lay, err := f.stack.tlsModule(m)
	if err != nil {
		return 0, err
	}
	tp, err := f.stack.regs.DWARF(arch.DwarfFSBase)
	if err != nil {
		return 0, fmt.Errorf("session: thread pointer: %w", err)
	}
	block, err := tls.Block(f, lay, tm, tp)
	if err != nil {
		return 0, err
	}
	return block + tm.Segment.Offset(offset), nil
}

// TLSLayout returns glibc's layout as this stack's process uses it and
// where it came from (for diagnostics and tests); nil for a static
// executable.
func (s *Stack) TLSLayout() (*tls.Layout, error) {
	s.tls.mu.Lock()
	defer s.tls.mu.Unlock()
	s.loadTLS()
	return s.tls.layout, s.tls.err
}

// moduleOf finds the module whose DWARF r reads; hint is tried first.
func (s *Stack) moduleOf(r *variables.Reader, hint *modules.Module) (*modules.Module, error) {
	s.tls.mu.Lock()
	m, ok := s.tls.modules[r]
	s.tls.mu.Unlock()
	if ok {
		return m, nil
	}
	candidates := append(modules.List{hint}, s.mods...)
	for _, c := range candidates {
		if c == nil {
			continue
		}
		b, _ := s.sess.Binary(c)
		if b == nil || !b.HasDWARF() {
			continue
		}
		if cr, err := variables.For(b); err == nil && cr == r {
			s.tls.mu.Lock()
			if s.tls.modules == nil {
				s.tls.modules = map[*variables.Reader]*modules.Module{}
			}
			s.tls.modules[r] = c
			s.tls.mu.Unlock()
			return c, nil
		}
	}
	return nil, errors.New("session: the variable's module is not loaded in this process")
}

// tlsModule describes m for package tls, with the layout to read it by.
func (s *Stack) tlsModule(m *modules.Module) (*tls.Module, *tls.Layout, error) {
	b, err := s.sess.Binary(m)
	if b == nil {
		if err == nil {
			err = fmt.Errorf("no symbol file")
		}
		return nil, nil, fmt.Errorf("session: %s: %w", m.Name, err)
	}
	tm := &tls.Module{Name: m.Name, Bias: m.Bias}
	for _, p := range b.ELF().Progs {
		if p.Type == elf.PT_TLS {
			tm.Segment = tls.Segment{Vaddr: p.Vaddr, Filesz: p.Filesz, Memsz: p.Memsz, Align: p.Align}
		}
	}
	if tm.Segment.Memsz == 0 {
		return nil, nil, &tls.Error{Module: m.Name, Op: "find TLS block", Err: tls.ErrNoTLS}
	}
	s.tls.mu.Lock()
	defer s.tls.mu.Unlock()
	s.loadTLS()
	if s.tls.static {
		if !m.Main {
			return nil, nil, fmt.Errorf("session: %s is not the executable of a statically linked process", m.Name)
		}
		return tm, nil, nil
	}
	if s.tls.err != nil && s.tls.linkMaps == nil {
		return nil, nil, s.tls.err
	}
	tm.LinkMap = s.tls.linkMaps[m]
	if tm.LinkMap == 0 {
		return nil, nil, fmt.Errorf("session: %s is not in the dynamic linker's link_map list", m.Name)
	}
	lay := s.tls.layout
	if lay == nil {
		// No DWARF of glibc: find the fields in this module's link_map.
		if lay, err = tls.ScanLayout(stackMemory{s}, tm); err != nil {
			return nil, nil, errors.Join(s.tls.err, err)
		}
		s.tls.layout = lay
	}
	return tm, lay, nil
}

// loadTLS reads, once, the link_map list and glibc's layout from the
// dynamic linker's DWARF. Callers hold s.tls.mu.
func (s *Stack) loadTLS() {
	st := &s.tls
	if st.loaded {
		return
	}
	st.loaded = true
	proc := s.thread.Process()
	rd, err := modules.FindRDebug(proc, s.mods.Main())
	if err != nil {
		st.err = err
		return
	}
	if rd == nil {
		// No r_debug: a statically linked program (no dynamic linker
		// mapped), or one stopped before the dynamic linker published it.
		for _, m := range s.mods {
			if m.Interpreter {
				st.err = errors.New("session: the dynamic linker has not set up its link_map list yet")
				return
			}
		}
		st.static = true
		return
	}
	st.linkMaps = map[*modules.Module]uint64{}
	for ns := 0; rd != nil && ns < maxNamespaces; ns++ {
		entries, err := modules.LinkMap(proc, rd.Map)
		for _, e := range entries {
			if e.Dynamic == 0 {
				continue
			}
			if m := s.mods.ForAddress(e.Dynamic); m != nil && !m.VDSO {
				st.linkMaps[m] = e.Addr
			}
		}
		if err != nil {
			st.err = errors.Join(st.err, err)
		}
		rd, err = nextNamespace(stackMemory{s}, proc, rd)
		if err != nil {
			st.err = errors.Join(st.err, err)
		}
	}
	// glibc's layout from the DWARF of the dynamic linker (libc6-dbg).
	for _, m := range s.mods {
		if !m.Interpreter {
			continue
		}
		b, _ := s.sess.Binary(m)
		if b == nil || !b.HasDWARF() {
			break
		}
		r, err := variables.For(b)
		if err != nil {
			break
		}
		var rtldGlobal uint64
		if syms, err := b.ELF().DynamicSymbols(); err == nil {
			for _, sym := range syms {
				if sym.Name == "_rtld_global" && sym.Value != 0 {
					rtldGlobal = sym.Value + m.Bias
				}
			}
		}
		if lay, err := layoutFromDWARF(r, rtldGlobal); err == nil {
			st.layout = lay
		} else {
			st.err = errors.Join(st.err, err)
		}
	}
}

// maxNamespaces bounds the link-map namespaces followed (glibc has 16).
const maxNamespaces = 16

// nextNamespace returns the r_debug of the next link-map namespace (made by
// dlmopen), nil after the last. Since glibc 2.35, r_debug is the head of
// struct r_debug_extended { struct r_debug base; struct r_debug_extended
// *r_next; }, which r_version 2 announces.
func nextNamespace(mem stackMemory, proc *target.Context, rd *modules.RDebug) (*modules.RDebug, error) {
	const rDebugSize = 40
	var b [8]byte
	if n, _ := mem.ReadMemory(b[:4], rd.Addr); n < 4 || binary.LittleEndian.Uint32(b[:]) < 2 {
		return nil, nil
	}
	if n, err := mem.ReadMemory(b[:], rd.Addr+rDebugSize); n < 8 {
		return nil, fmt.Errorf("session: reading r_debug_extended.r_next at %#x: %v", rd.Addr+rDebugSize, err)
	}
	next := binary.LittleEndian.Uint64(b[:])
	if next == 0 || next == rd.Addr {
		return nil, nil
	}
	return modules.ReadRDebug(proc, next)
}
