package symbols

// Reading a frame's arguments resolves call sites' named targets (a call
// into libc names `nanosleep`) to every address the name may stand for,
// and rebuilding tail-call frames asks for the address of such names too.
// Answering from the full symbol table (elfsym.New: every symbol of libc
// converted, sorted and deduplicated) cost a third of the CPU of a warm
// `sonde stack`. FunctionSymbols and FunctionAddress need only the function
// symbols of one name, so until the table exists for another reason they
// answer from this index: one pass over the raw .symtab and .dynsym
// entries, names sliced out of one string per string table, nothing sorted.

import (
	"debug/elf"
	"encoding/binary"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/symbols/elfsym"
)

// FunctionSymbol is a defined ELF function symbol (STT_FUNC or
// STT_GNU_IFUNC) of a binary, at its link-time address.
type FunctionSymbol struct {
	Addr uint64
	Size uint64
	Bind elf.SymBind
}

// funcSym is one indexed function symbol; next chains the symbols of one
// name (-1 ends the chain).
type funcSym struct {
	addr, size uint64
	bind       elf.SymBind
	next       int32
}

type funcSymIndex struct {
	once  sync.Once
	first map[string]int32 // name -> first entry of its chain in syms
	syms  []funcSym
	// mangled: some symbol name is C++ or Rust mangled, so a name the index
	// lacks may still be found by its demangled form (elfsym's ByName).
	mangled bool
}

// FunctionSymbols returns the defined function symbols called name (the
// symbol version dropped) with a non-zero address, as the symbol table's
// ByName filtered to functions returns them: one per address range, in
// address order, each with the binding of its preferred copy. err reports
// a file that faulted while being read (truncated under us).
func (b *Binary) FunctionSymbols(name string) (out []FunctionSymbol, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	if !b.symsReady.Load() {
		if out, ok := b.indexedFunctions(name); ok {
			return out, nil
		}
	}
	for _, s := range b.symbolsByName(name, elfsym.KindFunc, elfsym.KindIFunc) {
		if s.Addr != 0 {
			out = append(out, FunctionSymbol{Addr: s.Addr, Size: s.Size, Bind: s.Bind})
		}
	}
	return out, nil
}

// indexedFunctions answers FunctionSymbols from the index; false when only
// the table can answer: a PLT stub's name (the table makes those up), or a
// name the index lacks in a binary with mangled names (the table also finds
// symbols by their demangled names).
func (b *Binary) indexedFunctions(name string) ([]FunctionSymbol, bool) {
	if strings.HasSuffix(name, "@plt") {
		return nil, false
	}
	x := b.functionSymbolIndex()
	i, found := x.first[name]
	if !found {
		return nil, !x.mangled
	}
	var out []FunctionSymbol
	for ; i >= 0; i = x.syms[i].next {
		s := &x.syms[i]
		// Copies of one symbol (.symtab and .dynsym, binary and debug file)
		// are one: keep the binding the table prefers (non-local, then global).
		j := slices.IndexFunc(out, func(f FunctionSymbol) bool { return f.Addr == s.addr && f.Size == s.size })
		if j < 0 {
			out = append(out, FunctionSymbol{Addr: s.addr, Size: s.size, Bind: s.bind})
		} else if bindRank(s.bind) < bindRank(out[j].Bind) {
			out[j].Bind = s.bind
		}
	}
	slices.SortFunc(out, func(a, b FunctionSymbol) int {
		if a.Addr != b.Addr {
			return cmpUint64(a.Addr, b.Addr)
		}
		return cmpUint64(b.Size, a.Size) // the table's order: larger first
	})
	return out, true
}

// bindRank orders bindings as the symbol table prefers them.
func bindRank(b elf.SymBind) int {
	switch b {
	case elf.STB_GLOBAL:
		return 0
	case elf.STB_LOCAL:
		return 2
	}
	return 1
}

func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// functionSymbolIndex returns b's function-symbol index, built on first use
// from the files the symbol table would be built from.
func (b *Binary) functionSymbolIndex() *funcSymIndex {
	x := &b.fsyms
	x.once.Do(func() {
		x.first = map[string]int32{}
		seen := map[*elf.File]bool{}
		for _, f := range b.symbolFiles() {
			if f == nil || seen[f] {
				continue
			}
			seen[f] = true
			read := func(s *elf.Section) ([]byte, error) { return s.Data() }
			for _, ef := range []*elfFile{b.ef, b.debug} {
				if ef != nil && ef.f == f {
					read = ef.fileBytes // the mapped file: no copy
				}
			}
			for _, s := range f.Sections { // .symtab before .dynsym, as the table reads them
				if s.Type == elf.SHT_SYMTAB {
					x.add(f, s, read)
				}
			}
			for _, s := range f.Sections {
				if s.Type == elf.SHT_DYNSYM {
					x.add(f, s, read)
				}
			}
		}
	})
	return x
}

// add indexes the defined function symbols of symbol table s with elfsym's
// rules: a symbol of a loaded section (not undefined, not a reserved
// index), STT_FUNC or STT_GNU_IFUNC, named, its @version dropped, address
// not zero. A damaged table adds what it can read.
func (x *funcSymIndex) add(f *elf.File, s *elf.Section, read func(*elf.Section) ([]byte, error)) {
	if s.Link == 0 || int(s.Link) >= len(f.Sections) || f.Sections[s.Link].Type == elf.SHT_NOBITS {
		return // a debug file's .dynsym has no bytes (nor names)
	}
	syms, err := read(s)
	if err != nil {
		return
	}
	strs, err := read(f.Sections[s.Link])
	if err != nil {
		return
	}
	names := string(strs) // one copy; every name is a substring of it
	le := binary.LittleEndian
	for off := symEntrySize; off+symEntrySize <= len(syms); off += symEntrySize { // entry 0 is reserved
		e := syms[off : off+symEntrySize]
		info, shndx, value := e[4], elf.SectionIndex(le.Uint16(e[6:])), le.Uint64(e[8:])
		no := le.Uint32(e)
		if uint64(no) >= uint64(len(names)) {
			continue
		}
		name := names[no:]
		if i := strings.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if !x.mangled && (strings.HasPrefix(name, "_Z") || strings.HasPrefix(name, "_R")) {
			x.mangled = true // of any kind: the table's demangled index holds them all
		}
		if t := elf.ST_TYPE(info); t != elf.STT_FUNC && t != elf.STT_GNU_IFUNC {
			continue
		}
		if shndx == elf.SHN_UNDEF || shndx >= elf.SHN_LORESERVE || int(shndx) >= len(f.Sections) ||
			f.Sections[shndx].Flags&elf.SHF_ALLOC == 0 || value == 0 {
			continue
		}
		name, _ = elfsym.StripVersion(name)
		if name == "" {
			continue
		}
		next, ok := x.first[name]
		if !ok {
			next = -1
		}
		x.first[name] = int32(len(x.syms))
		x.syms = append(x.syms, funcSym{addr: value, size: le.Uint64(e[16:]), bind: elf.ST_BIND(info), next: next})
	}
}

// functionAddress is FunctionAddress's answer from the index: the lowest
// address of a global (or weak) function symbol called name, else of a
// local one.
func (b *Binary) functionAddress(name string) (addr uint64, global, ok bool) {
	x := b.functionSymbolIndex()
	i, found := x.first[name]
	if !found {
		return 0, false, false
	}
	var local uint64
	var hasLocal bool
	for ; i >= 0; i = x.syms[i].next {
		s := &x.syms[i]
		if s.bind != elf.STB_LOCAL {
			if !global || s.addr < addr {
				addr, global = s.addr, true
			}
		} else if !hasLocal || s.addr < local {
			local, hasLocal = s.addr, true
		}
	}
	if global {
		return addr, true, true
	}
	return local, false, hasLocal
}
