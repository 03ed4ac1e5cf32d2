package symbols

import (
	"debug/elf"
	"sort"

	"github.com/ianlancetaylor/demangle"
)

// symbolSource names addresses from ELF symbol tables.
type symbolSource interface {
	lookup(addr uint64) (symbolHit, bool)
	byName(name string) []symbolHit
	objectsByName(name string) []symbolHit
}

type symbolHit struct {
	name, display string
	start, size   uint64
}

type symEntry struct {
	start, size uint64
	name        string
}

type simpleSymbols []symEntry

func loadSymbols(f, dbg *elf.File) (symbolSource, error) {
	var out simpleSymbols
	var firstErr error
	for _, file := range []*elf.File{f, dbg} {
		if file == nil {
			continue
		}
		for _, get := range []func() ([]elf.Symbol, error){file.Symbols, file.DynamicSymbols} {
			syms, err := get()
			if err != nil && err != elf.ErrNoSymbols && firstErr == nil {
				firstErr = err
			}
			for _, s := range syms {
				if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && s.Size > 0 {
					out = append(out, symEntry{s.Value, s.Size, s.Name})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out, firstErr
}

func (s simpleSymbols) lookup(addr uint64) (symbolHit, bool) {
	i := sort.Search(len(s), func(i int) bool { return s[i].start > addr }) - 1
	for ; i >= 0 && i >= len(s)-1-len(s); i-- {
		e := s[i]
		if addr < e.start+e.size {
			d, err := demangle.ToString(e.name)
			if err != nil {
				d = e.name
			}
			return symbolHit{e.name, d, e.start, e.size}, true
		}
		break
	}
	return symbolHit{}, false
}

func (s simpleSymbols) byName(name string) []symbolHit {
	var out []symbolHit
	for _, e := range s {
		if e.name == name {
			out = append(out, symbolHit{e.name, e.name, e.start, e.size})
		}
	}
	return out
}

func (s simpleSymbols) objectsByName(name string) []symbolHit { return nil }
