package session

import (
	"fmt"

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
