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

// funcSym is one function symbol found by name.
type funcSym struct {
	addr, size uint64
	bind       elf.SymBind
}

// symTable is one raw symbol table with its string table.
type symTable struct {
	f          *elf.File
	syms, strs []byte
}

// funcSymIndex answers by name from the raw symbol tables. A stack asks for
// a few dozen names, so each is found by one scan of the tables (tens of
// microseconds for libc) and remembered, instead of hashing every name of
// the tables into a map first (several milliseconds, more than all the
// scans of a run).
type funcSymIndex struct {
	once   sync.Once
	tables []symTable
	// mangled: some symbol name is C++ or Rust mangled, so a name the index
	// lacks may still be found by its demangled form (elfsym's ByName).
	mangled bool

	mu    sync.Mutex
	found map[string][]funcSym
}

// FunctionSymbols returns the defined function symbols called name (the
// symbol version dropped) with a non-zero address, as the symbol table's
// ByName filtered to functions returns them: one per address range, in
// address order, each with the binding of its preferred copy. err reports
// a file that faulted while being read (truncated under us).
func (b *Binary) FunctionSymbols(name string) (out []FunctionSymbol, err error) {
	return b.functionSymbols(name, false)
}

// LinkageFunctionSymbols is FunctionSymbols for a linkage name (how DWARF
// names a call site's target): demangled names are never tried, so a miss
// in a large C++ library (libjvm.so's 54k symbols) costs a map lookup, not
// demangling the whole table.
func (b *Binary) LinkageFunctionSymbols(name string) (out []FunctionSymbol, err error) {
	return b.functionSymbols(name, true)
}

func (b *Binary) functionSymbols(name string, linkageOnly bool) (out []FunctionSymbol, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	if linkageOnly || !b.symsReady.Load() { // the index answers linkage names, table or not
		if out, ok := b.indexedFunctions(name, linkageOnly); ok {
			return out, nil
		}
	}
	var syms []elfsym.Symbol
	if linkageOnly {
		syms = b.symbols().ByLinkageName(name)
	} else {
		syms = b.symbols().ByName(name)
	}
	for _, s := range syms {
		if s.Addr != 0 && (s.Kind == elfsym.KindFunc || s.Kind == elfsym.KindIFunc) {
			out = append(out, FunctionSymbol{Addr: s.Addr, Size: s.Size, Bind: s.Bind})
		}
	}
	return out, nil
}

// indexedFunctions answers FunctionSymbols from the index; false when only
// the table can answer: a PLT stub's name (the table makes those up), or a
// name the index lacks in a binary with mangled names (the table also finds
// symbols by their demangled names) unless linkageOnly.
func (b *Binary) indexedFunctions(name string, linkageOnly bool) ([]FunctionSymbol, bool) {
	if strings.HasSuffix(name, "@plt") {
		return nil, false
	}
	x := b.functionSymbolIndex()
	syms := x.lookup(name)
	if len(syms) == 0 {
		return nil, linkageOnly || !x.mangled
	}
	var out []FunctionSymbol
	for i := range syms {
		s := &syms[i]
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

// functionSymbolIndex returns b's function-symbol index, set up on first
// use over the files the symbol table would be built from.
func (b *Binary) functionSymbolIndex() *funcSymIndex {
	x := &b.fsyms
	x.once.Do(func() {
		x.found = map[string][]funcSym{}
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
			for _, s := range f.Sections {
				if s.Type != elf.SHT_SYMTAB && s.Type != elf.SHT_DYNSYM {
					continue
				}
				if s.Link == 0 || int(s.Link) >= len(f.Sections) || f.Sections[s.Link].Type == elf.SHT_NOBITS {
					continue // a debug file's .dynsym has no bytes (nor names)
				}
				syms, err1 := read(s)
				strs, err2 := read(f.Sections[s.Link])
				if err1 != nil || err2 != nil {
					continue // a damaged table: the others still answer
				}
				x.tables = append(x.tables, symTable{f: f, syms: syms, strs: strs})
				x.mangled = x.mangled || hasMangledName(syms, strs)
			}
		}
	})
	return x
}

// hasMangledName reports whether a symbol of the table has a C++ or Rust
// mangled name (of any kind: the table's demangled index holds them all).
func hasMangledName(syms, strs []byte) bool {
	for off := symEntrySize; off+symEntrySize <= len(syms); off += symEntrySize {
		no := uint64(binary.LittleEndian.Uint32(syms[off:]))
		if no+2 <= uint64(len(strs)) && strs[no] == '_' && (strs[no+1] == 'Z' || strs[no+1] == 'R') {
			return true
		}
	}
	return false
}

// lookup returns the function symbols whose name, its @version dropped, is
// name, with elfsym's rules: a symbol of a loaded section (not undefined,
// not a reserved index), STT_FUNC or STT_GNU_IFUNC, address not zero.
func (x *funcSymIndex) lookup(name string) []funcSym {
	x.mu.Lock()
	defer x.mu.Unlock()
	if r, ok := x.found[name]; ok {
		return r
	}
	var out []funcSym
	// A stripped name holds no '@' after its first byte (StripVersion).
	if name != "" && strings.IndexByte(name[1:], '@') < 0 {
		for _, t := range x.tables {
			out = t.appendFunctions(out, name)
		}
	}
	if len(x.found) < 1<<14 { // names come from the target's DWARF: bound the memo
		x.found[name] = out
	}
	return out
}

// appendFunctions appends the function symbols of t called name.
func (t *symTable) appendFunctions(out []funcSym, name string) []funcSym {
	le := binary.LittleEndian
	syms, strs, f := t.syms, t.strs, t.f
	for off := symEntrySize; off+symEntrySize <= len(syms); off += symEntrySize { // entry 0 is reserved
		e := syms[off : off+symEntrySize]
		info := e[4]
		if typ := elf.ST_TYPE(info); typ != elf.STT_FUNC && typ != elf.STT_GNU_IFUNC {
			continue
		}
		no := uint64(le.Uint32(e))
		end := no + uint64(len(name))
		if end >= uint64(len(strs)) || string(strs[no:end]) != name {
			continue
		}
		// The whole name, or the name then its version (a first '@' after
		// the first byte: StripVersion).
		if c := strs[end]; c != 0 && (c != '@' || name[0] == '@') {
			continue
		}
		shndx, value := elf.SectionIndex(le.Uint16(e[6:])), le.Uint64(e[8:])
		if shndx == elf.SHN_UNDEF || shndx >= elf.SHN_LORESERVE || int(shndx) >= len(f.Sections) ||
			f.Sections[shndx].Flags&elf.SHF_ALLOC == 0 || value == 0 {
			continue
		}
		out = append(out, funcSym{addr: value, size: le.Uint64(e[16:]), bind: elf.ST_BIND(info)})
	}
	return out
}

// functionAddress is FunctionAddress's answer from the index: the lowest
// address of a global (or weak) function symbol called name, else of a
// local one.
func (b *Binary) functionAddress(name string) (addr uint64, global, ok bool) {
	var local uint64
	var hasLocal bool
	syms := b.functionSymbolIndex().lookup(name)
	for i := range syms {
		s := &syms[i]
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
