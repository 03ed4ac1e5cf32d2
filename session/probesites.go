package session

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/sondedbg/sonde/modules"

	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/symbols/elfsym"
	"github.com/sondedbg/sonde/target"
)

// What fast probes (translate/probes) need from the symbols layer: a
// location named by any ELF symbol (asm labels included), and the bounds of
// the function containing a site, to decode it whole.

// SymbolAddresses returns the run-time addresses of the ELF symbols called
// name (functions, labels, any kind but data) in every module of c's
// process, sorted and without duplicates.
func (s *Session) SymbolAddresses(c *target.Context, name string) ([]uint64, error) {
	return s.addressesInModules(c, "symbol "+name, func(b *symbols.Binary) ([]uint64, error) {
		t, err := b.Symbols()
		if t == nil {
			return nil, err
		}
		var out []uint64
		for _, sym := range t.ByName(name) {
			if sym.Kind != elfsym.KindObject {
				out = append(out, sym.Addr)
			}
		}
		return out, nil
	})
}

// FunctionBounds returns the function symbol (with a size) containing the
// run-time address pc in c's process: its name and run-time [lo, hi).
func (s *Session) FunctionBounds(c *target.Context, pc uint64) (name string, lo, hi uint64, err error) {
	mods, err := s.Modules(c)
	if err != nil {
		return "", 0, 0, err
	}
	m := mods.ForAddress(pc)
	if m == nil {
		return "", 0, 0, fmt.Errorf("%#x is in no module", pc)
	}
	b, err := s.Binary(m)
	if b == nil {
		return "", 0, 0, fmt.Errorf("%s: no symbols: %v", m.Name, err)
	}
	t, err := b.Symbols()
	if t == nil {
		return "", 0, 0, fmt.Errorf("%s: no symbol table: %v", m.Name, err)
	}
	sym, _, ok := t.Lookup(pc - m.Bias)
	if ok && sym.Size == 0 {
		// A label (asm) at pc: the smallest sized symbol around it.
		ok = false
		for _, cand := range t.Symbols() {
			if cand.Size > 0 && cand.Contains(pc-m.Bias) && (!ok || cand.Size < sym.Size) {
				sym, ok = cand, true
			}
		}
	}
	if !ok || sym.Size == 0 || sym.Kind == elfsym.KindObject {
		return "", 0, 0, fmt.Errorf("%#x is in no function symbol with a size in %s", pc, m.Name)
	}
	return sym.Name, sym.Addr + m.Bias, sym.End() + m.Bias, nil
}

// PaddingAfter returns how many bytes after a function ending at the
// run-time address hi (up to max) belong to no symbol: alignment padding,
// which fast probes may overwrite behind a function's last ret.
func (s *Session) PaddingAfter(c *target.Context, hi uint64, max int) int {
	mods, err := s.Modules(c)
	if err != nil {
		return 0
	}
	m := mods.ForAddress(hi - 1)
	if m == nil || !m.Contains(hi) {
		return 0
	}
	b, _ := s.Binary(m)
	if b == nil {
		return 0
	}
	t, _ := b.Symbols()
	if t == nil {
		return 0
	}
	for n := 0; n < max; n++ {
		if _, _, ok := t.Lookup(hi + uint64(n) - m.Bias); ok || len(t.Aliases(hi+uint64(n)-m.Bias)) > 0 {
			return n
		}
	}
	return max
}

// FunctionExtent is a function symbol's run-time extent.
type FunctionExtent struct {
	Name   string
	Lo, Hi uint64
}

// FunctionsNear returns the function symbols with a size in the module of
// lo that overlap [lo-reach, hi+reach), other than those covering [lo, hi)
// itself: the code a short branch into [lo, hi) can come from (glibc's
// mempcpy jumps into memcpy, 13 bytes after its own start).
func (s *Session) FunctionsNear(c *target.Context, lo, hi, reach uint64) ([]FunctionExtent, error) {
	mods, err := s.Modules(c)
	if err != nil {
		return nil, err
	}
	m := mods.ForAddress(lo)
	if m == nil {
		return nil, fmt.Errorf("%#x is in no module", lo)
	}
	b, err := s.Binary(m)
	if b == nil {
		return nil, fmt.Errorf("%s: no symbols: %v", m.Name, err)
	}
	t, err := b.Symbols()
	if t == nil {
		return nil, fmt.Errorf("%s: no symbol table: %v", m.Name, err)
	}
	from, to := lo-reach-m.Bias, hi+reach-m.Bias
	seen := map[uint64]bool{}
	var out []FunctionExtent
	for _, sym := range t.Symbols() {
		if sym.Size == 0 || sym.Kind == elfsym.KindObject || sym.End() <= from || sym.Addr >= to {
			continue
		}
		if sym.Addr+m.Bias <= lo && sym.End()+m.Bias >= hi || seen[sym.Addr] {
			continue // the function itself (or an alias of it)
		}
		seen[sym.Addr] = true
		out = append(out, FunctionExtent{Name: sym.Name, Lo: sym.Addr + m.Bias, Hi: sym.End() + m.Bias})
	}
	return out, nil
}

// CalledAddresses narrows addrs, where the function name resolved in c's
// process (FunctionAddresses), to the code calls of it run. When a module
// exports the name (a defined global or weak function), calls bind
// to the first such module in lookup order (the executable, the
// libraries, the dynamic linker last), so definitions in modules that do not
// export it (local after the link) — the dynamic linker's private memcpy,
// strlen, getpid — are
// dropped. An exported indirect function (STT_GNU_IFUNC: the address is its
// resolver) is replaced by the implementation the resolver chose, read from
// a GOT slot the dynamic linker filled for an IRELATIVE relocation of the
// same resolver (the library's own calls); note says when that is not known
// and the resolver is kept. Addresses of no symbol called name are kept.
func (s *Session) CalledAddresses(c *target.Context, name string, addrs []uint64) (out []uint64, note string) {
	mods, err := s.Modules(c)
	if err != nil {
		return addrs, ""
	}
	type def struct {
		m        *modules.Module
		exported bool
		ifunc    bool
		link     uint64
	}
	defs := map[uint64]def{}
	var binder *modules.Module
	for _, m := range lookupOrder(mods) {
		b, _ := s.Binary(m)
		if b == nil {
			continue
		}
		t, _ := b.Symbols()
		if t == nil {
			continue
		}
		for _, sym := range t.ByName(name) {
			if sym.Kind != elfsym.KindFunc && sym.Kind != elfsym.KindIFunc || sym.Addr == 0 {
				continue
			}
			d := defs[sym.Addr+m.Bias]
			d.m, d.link = m, sym.Addr
			// Global or weak after the link: visible to other modules
			// (hidden ones became local; the symbol tables are merged, so
			// .dynsym's entry may show as .symtab's).
			if sym.Bind == elf.STB_GLOBAL || sym.Bind == elf.STB_WEAK {
				d.exported = true
				if binder == nil {
					binder = m
				}
			}
			d.ifunc = d.ifunc || sym.Kind == elfsym.KindIFunc
			defs[sym.Addr+m.Bias] = d
		}
	}
	if binder == nil {
		return addrs, ""
	}
	for _, a := range addrs {
		d, ok := defs[a]
		switch {
		case !ok && binder != nil && !binder.Interpreter && inInterpreter(mods, a):
			// The dynamic linker's private copy, known from its debug
			// information only.
		case !ok:
			out = append(out, a) // not a symbol of that name (a DWARF-only copy): keep
		case d.m != binder:
			// Another module's definition: calls bind elsewhere.
		case d.ifunc:
			if impl, ok := s.ifuncTarget(c, d.m, d.link); ok {
				out = append(out, impl)
			} else {
				out = append(out, a)
				note = fmt.Sprintf("%s is an indirect function in %s whose implementation is not known yet: the resolver is probed", name, d.m.Name)
			}
		default:
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return addrs, ""
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, note
}

// lookupOrder is the dynamic linker's symbol lookup order, as far as the
// module list tells: the executable, the libraries, the dynamic linker.
func lookupOrder(mods modules.List) []*modules.Module {
	var out, last []*modules.Module
	if m := mods.Main(); m != nil {
		out = append(out, m)
	}
	for _, m := range mods {
		switch {
		case m.Main:
		case m.Interpreter:
			last = append(last, m)
		default:
			out = append(out, m)
		}
	}
	return append(out, last...)
}

// ifuncTarget returns the run-time implementation of the indirect function
// whose resolver is at link-time address resolver in m: the GOT slot of an
// IRELATIVE relocation of that resolver, as the dynamic linker filled it.
func (s *Session) ifuncTarget(c *target.Context, m *modules.Module, resolver uint64) (uint64, bool) {
	b, _ := s.Binary(m)
	if b == nil {
		return 0, false
	}
	slots, _ := b.IRelativeSlots(resolver)
	for _, slot := range slots {
		var w [8]byte
		if n, _ := c.ReadMemory(slot+m.Bias, w[:]); n != 8 {
			continue
		}
		if impl := binary.LittleEndian.Uint64(w[:]); m.Contains(impl) && impl != resolver+m.Bias {
			return impl, true
		}
	}
	return 0, false
}

// InInterpreter reports whether every address is in the dynamic linker.
func (s *Session) InInterpreter(c *target.Context, addrs []uint64) bool {
	mods, err := s.Modules(c)
	if err != nil || len(addrs) == 0 {
		return false
	}
	interp := mods.Interpreter()
	if interp == nil {
		return false
	}
	for _, a := range addrs {
		if !interp.Contains(a) {
			return false
		}
	}
	return true
}

func inInterpreter(mods modules.List, a uint64) bool {
	m := mods.Interpreter()
	return m != nil && m.Contains(a)
}
