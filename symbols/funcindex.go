package symbols

// A backtrace resolves call sites' named targets (DW_AT_call_origin of a
// declaration: `nanosleep` for a call into libc) to addresses, to rebuild
// tail-call frames. Building the full symbol table for that (elfsym.New:
// every symbol converted, sorted, deduplicated) was a quarter of the CPU
// of a first `sonde stack` on libc. FunctionAddress only needs, per name,
// the lowest address of a global and of a local function symbol, so until
// the full table exists for another reason it answers from this index:
// one pass over the raw .symtab and .dynsym entries, names sliced out of
// one string per string table, nothing sorted.

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/symbols/elfsym"
)

// funcAddrs is what the index keeps per name: the lowest address of a
// global (or weak) and of a local defined function symbol.
type funcAddrs struct {
	global, local       uint64
	hasGlobal, hasLocal bool
}

type funcIndex struct {
	once sync.Once
	m    map[string]funcAddrs
}

// symEntrySize is sizeof(Elf64_Sym).
const symEntrySize = 24

// functionIndex returns b's function-name index, built on first use from
// the files the symbol table would be built from.
func (b *Binary) functionIndex() map[string]funcAddrs {
	b.funcs.once.Do(func() {
		m := map[string]funcAddrs{}
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
				if s.Type == elf.SHT_SYMTAB || s.Type == elf.SHT_DYNSYM {
					addFunctions(m, f, s, read)
				}
			}
		}
		b.funcs.m = m
	})
	return b.funcs.m
}

// addFunctions adds the defined function symbols of symbol table s to m,
// with elfsym's rules: a symbol of a loaded section (not undefined, not a
// reserved index), STT_FUNC or STT_GNU_IFUNC, named, its @version dropped.
// A damaged table adds what it can read.
func addFunctions(m map[string]funcAddrs, f *elf.File, s *elf.Section, read func(*elf.Section) ([]byte, error)) {
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
		if t := elf.ST_TYPE(info); t != elf.STT_FUNC && t != elf.STT_GNU_IFUNC {
			continue
		}
		if shndx == elf.SHN_UNDEF || shndx >= elf.SHN_LORESERVE || int(shndx) >= len(f.Sections) ||
			f.Sections[shndx].Flags&elf.SHF_ALLOC == 0 || value == 0 {
			continue
		}
		no := le.Uint32(e)
		if uint64(no) >= uint64(len(names)) {
			continue
		}
		name := names[no:]
		if i := strings.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		name, _ = elfsym.StripVersion(name)
		if name == "" {
			continue
		}
		a := m[name]
		if elf.ST_BIND(info) != elf.STB_LOCAL {
			if !a.hasGlobal || value < a.global {
				a.global, a.hasGlobal = value, true
			}
		} else if !a.hasLocal || value < a.local {
			a.local, a.hasLocal = value, true
		}
		m[name] = a
	}
}

// symbolFiles are the ELF files b's symbol table is built from.
func (b *Binary) symbolFiles() []*elf.File {
	var out []*elf.File
	for _, f := range []*elfFile{b.ef, b.debug} {
		if f != nil {
			out = append(out, f.f)
		}
	}
	if b.found != nil && b.found.MiniDebugInfo != nil {
		out = append(out, b.found.MiniDebugInfo)
	}
	return out
}

// fileBytes returns the bytes of an uncompressed section of e as they are
// in the file (a symbol or string table), without copying them.
func (e *elfFile) fileBytes(s *elf.Section) ([]byte, error) {
	if s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_COMPRESSED != 0 {
		return s.Data()
	}
	if s.Offset > uint64(len(e.data)) || s.Size > uint64(len(e.data))-s.Offset {
		return nil, errors.New("section extends past the end of the file")
	}
	return e.data[s.Offset : s.Offset+s.Size], nil
}
