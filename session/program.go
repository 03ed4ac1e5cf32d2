package session

// What front ends ask about a process's program beyond its stacks: where it
// starts, what its libraries are called, and which symbol an address is in.

import (
	"debug/elf"
	"fmt"
	"strings"

	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/symbols/elfsym"
	"github.com/sondedbg/sonde/target"
)

// Module is one load module of a process: its file, load bias and mappings.
// Front ends name modules through session; package modules finds them.
type Module = modules.Module

// ModuleList is a process's modules, sorted by address.
type ModuleList = modules.List

// EntryAddress returns the run-time address of the executable's entry point
// (ELF e_entry: _start for C programs).
func (s *Session) EntryAddress(proc *target.Context) (uint64, error) {
	m, err := s.mainModule(proc)
	if err != nil {
		return 0, err
	}
	b, err := s.Binary(m)
	if b == nil {
		return 0, fmt.Errorf("session: %s: %w", m.Name, err)
	}
	return b.ELF().Entry + m.Bias, nil
}

// MainAddress returns the run-time address of the program's main function
// as gdb's start finds it: the ELF symbol main; and when that main is a
// language runtime's shim without line information while DWARF marks
// another function as the program's main (DW_AT_main_subprogram: Rust's
// crate::main, Fortran's program), that function.
func (s *Session) MainAddress(proc *target.Context) (uint64, error) {
	m, err := s.mainModule(proc)
	if err != nil {
		return 0, err
	}
	b, err := s.Binary(m)
	if b == nil {
		return 0, fmt.Errorf("session: %s: %w", m.Name, err)
	}
	t, err := b.Symbols()
	if t == nil {
		return 0, fmt.Errorf("session: %s: %w", m.Name, err)
	}
	var main uint64
	for _, sym := range t.ByName("main") {
		if sym.Kind == elfsym.KindFunc && sym.Addr != 0 {
			main = sym.Addr
			break
		}
	}
	if main == 0 {
		return 0, fmt.Errorf("session: %s has no symbol %q", m.Name, "main")
	}
	if _, ok, _ := b.LineAt(main); !ok {
		if fns, _ := b.MainSubprograms(); len(fns) == 1 && fns[0].Entry != 0 {
			main = fns[0].Entry
		}
	}
	return main + m.Bias, nil
}

func (s *Session) mainModule(proc *target.Context) (*Module, error) {
	mods, err := s.Modules(proc)
	if err != nil {
		return nil, err
	}
	m := mods.Main()
	if m == nil {
		return nil, fmt.Errorf("session: process %s has no main executable among its modules", proc.Process().ID())
	}
	return m, nil
}

// RDebug is the dynamic linker's r_debug: its link map's head, the
// address it calls on every change (r_brk) and its state.
type RDebug = modules.RDebug

// Loader returns the dynamic linker's r_debug of proc, found through the
// executable's DT_DEBUG; nil without an error for a static executable or
// before the dynamic linker has published it.
func (s *Session) Loader(proc *target.Context) (*RDebug, error) {
	m, err := s.mainModule(proc)
	if err != nil {
		return nil, err
	}
	return modules.FindRDebug(proc.Process(), m)
}

// LoadedNames returns the names the dynamic linker gave the process's
// shared libraries (its link map's l_name: "/lib/x86_64-linux-gnu/libc.so.6"
// where the memory map shows the resolved "/usr/lib/..."), which gdb prints
// in "from LIB". Empty for static executables and when the map is
// unreadable.
func (s *Session) LoadedNames(proc *target.Context) map[*Module]string {
	names := map[*Module]string{}
	mods, err := s.Modules(proc)
	if err != nil {
		return names
	}
	p := proc.Process()
	rd, err := modules.FindRDebug(p, mods.Main())
	if err != nil || rd == nil {
		return names
	}
	entries, _ := modules.LinkMap(p, rd.Map)
	for _, e := range entries {
		if e.Name == "" || e.Dynamic == 0 {
			continue
		}
		if m := mods.ForAddress(e.Dynamic); m != nil && !m.Main && !m.VDSO {
			names[m] = e.Name
		}
	}
	return names
}

// SymbolAt returns the ELF symbol whose range holds a run-time address of
// c's process and the offset into it (gdb's <name+offset>): the linkage
// name, not demangled, as gdb's info registers prints it. The vDSO is not
// looked in.
func (s *Session) SymbolAt(c *target.Context, addr uint64) (name string, offset uint64, ok bool) {
	mods, err := s.Modules(c)
	if err != nil {
		return "", 0, false
	}
	return s.symbolIn(mods, addr)
}

func (s *Session) symbolIn(mods modules.List, addr uint64) (string, uint64, bool) {
	m, b := s.moduleHolding(mods, addr)
	if b == nil {
		return "", 0, false
	}
	t, err := b.Symbols()
	if t == nil || err != nil {
		return "", 0, false
	}
	sym, off, ok := t.Lookup(addr - m.Bias)
	if !ok || sym.Name == "" {
		return "", 0, false
	}
	return sym.Name, off, true
}

// demangledSymbolIn is symbolIn with C++ names demangled, as gdb's print
// symbol shows them (<cv+40>).
func (s *Session) demangledSymbolIn(mods modules.List, addr uint64) string {
	name, off, ok := s.symbolIn(mods, addr)
	if !ok {
		return ""
	}
	name = s.cloneBaseName(mods, name, addr-off)
	if strings.HasPrefix(name, "_Z") {
		name = elfsym.Demangle(name)
	}
	if off != 0 {
		return fmt.Sprintf("%s+%d", name, off)
	}
	return name
}

// moduleHolding returns the module whose memory holds addr, and its binary:
// the module whose mappings hold it, or else the one below addr whose
// loadable segments do in memory beyond the file — the part of .bss past
// the file's last page, which the process maps as anonymous memory
// (mariadbd's COND_manager, gdb's <COND_manager+40>). Never the vDSO (its
// symbol file would be looked for, and warned about).
func (s *Session) moduleHolding(mods modules.List, addr uint64) (*Module, *symbols.Binary) {
	m := mods.ForAddress(addr)
	inFile := m != nil
	if m == nil {
		for _, c := range mods {
			if c.Start <= addr && (m == nil || c.Start > m.Start) {
				m = c
			}
		}
	}
	if m == nil || m.VDSO {
		return nil, nil
	}
	b, _ := s.Binary(m)
	if b == nil {
		return nil, nil
	}
	if !inFile && !inLoadSegment(b.ELF(), addr-m.Bias) {
		return nil, nil
	}
	return m, b
}

// inLoadSegment reports whether the link-time address a lies in one of f's
// PT_LOAD segments as loaded (their memory size, .bss included).
func inLoadSegment(f *elf.File, a uint64) bool {
	if f == nil {
		return false
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && a >= p.Vaddr && a-p.Vaddr < p.Memsz {
			return true
		}
	}
	return false
}
