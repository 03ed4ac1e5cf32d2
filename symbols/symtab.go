package symbols

import (
	"debug/elf"
	"runtime/debug"
	"strings"

	"github.com/sondedbg/sonde/symbols/elfsym"
)

// Symbols returns the binary's ELF symbol table: .symtab and .dynsym of the
// binary, of its separate debug file and of its MiniDebugInfo, with
// synthetic sym@plt entries. Read on first use; shared, do not modify.
func (b *Binary) Symbols() (t *elfsym.Table, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	return b.symbols(), nil
}

// symbols returns the binary's ELF symbol table (its own .symtab/.dynsym,
// the debug file's and MiniDebugInfo's, plus sym@plt), read on first use.
func (b *Binary) symbols() *elfsym.Table {
	b.symsOnce.Do(func() {
		files := []*elfFile{b.ef, b.debug}
		var args []*elf.File
		for _, f := range files {
			if f != nil {
				args = append(args, f.f)
			}
		}
		if b.found != nil && b.found.MiniDebugInfo != nil {
			args = append(args, b.found.MiniDebugInfo)
		}
		t, err := elfsym.New(b.path, args...)
		if err != nil {
			b.warn(&Error{File: b.path, Op: "read ELF symbols", Err: err})
		}
		if t == nil {
			t, _ = elfsym.New(b.path)
		}
		b.syms = t
		b.symsReady.Store(true)
	})
	return b.syms
}

// symbolFrame names addr from the ELF symbols into f; false when no symbol
// covers addr (never the nearest symbol outside its size).
func (b *Binary) symbolFrame(f *Frame, addr uint64) bool {
	s, _, ok := b.symbols().Lookup(addr)
	if !ok {
		return false
	}
	f.Function, f.LinkageName, f.Start, f.FromSymbolTable = s.Demangled(), s.Name, s.Addr, true
	return true
}

// completeLinkageName gives an out-of-line function frame that DWARF names
// without a linkage name (GCC omits it for lambdas and some templates) the
// mangled name of the ELF symbol starting at the same address, so that C++
// names are fully qualified, as addr2line prints them. Clone suffixes
// (".cold", ".isra.0") are not part of the source name and are dropped.
func (b *Binary) completeLinkageName(f *Frame) {
	for _, s := range b.symbols().Aliases(f.Start) {
		if !strings.HasPrefix(s.Name, "_Z") && !strings.HasPrefix(s.Name, "_R") {
			continue
		}
		name := s.Name
		if i := strings.IndexByte(name, '.'); i > 0 {
			name = name[:i]
		}
		if r := b.dw.nameStore().demangled(name); r.ok {
			f.Function, f.LinkageName = r.display, name
		}
		return
	}
}

// needsSymbolName reports whether completeLinkageName would consult the
// symbol table for f: C functions (no scope, template or operator in the
// name) never need it.
func needsSymbolName(f *Frame) bool {
	return f.LinkageName == "" && !f.Inlined && f.Start != 0 && cxxLike(f.Function)
}

// symbolsByName returns the ELF symbols called name of the given kinds.
func (b *Binary) symbolsByName(name string, kinds ...elfsym.Kind) []elfsym.Symbol {
	var out []elfsym.Symbol
	for _, s := range b.symbols().ByName(name) {
		for _, k := range kinds {
			if s.Kind == k {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// cxxLike reports whether a DWARF name has C++ punctuation (scope, template
// arguments or an operator's parentheses).
func cxxLike(name string) bool {
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case ':', '<', '(':
			return true
		}
	}
	return false
}
