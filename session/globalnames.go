package session

// A cheap "no" for global lookups in libraries: the first lookup of a name
// in a library's DWARF indexes every unit (seconds for libc with its debug
// file), so a name that no library can define — a misspelt word under a
// hover, a completion prefix — is first checked against the names of the
// library's ELF symbol tables. A variable a library defines has storage, so
// a symbol: global ones in .dynsym, static ones (renamed "name.0" or
// "name.lto_priv.0" by GCC) in the link-time .symtab that the separate
// debug file keeps.

import (
	"debug/elf"
	"strings"

	"github.com/sondedbg/sonde/symbols"
)

// filterGlobalsBySymbols turns the check off for the benchmark's
// comparison with reading every library's DWARF.
var filterGlobalsBySymbols = true

// symbolNamesKey is the key of a Binary's symbolNames among its Derived values.
type symbolNamesKey struct{}

// symbolNames is the set of names a binary's ELF symbols can stand for.
// complete is false when no .symtab was found: .dynsym alone does not name
// static variables, so its absence proves nothing.
type symbolNames struct {
	names    map[string]struct{}
	complete bool
}

// mayDefineGlobal reports whether b's DWARF can define a global or static
// variable called name, judging by its ELF symbols; true when that cannot
// be told (no .symtab, or a name with C++ scope or template punctuation,
// which is matched through DWARF's qualified names).
func mayDefineGlobal(b *symbols.Binary, name string) bool {
	if !plainIdentifier(name) {
		return true
	}
	sn := b.Derived(symbolNamesKey{}, func() any { return readSymbolNames(b) }).(*symbolNames)
	if !sn.complete {
		return true
	}
	_, ok := sn.names[name]
	return ok
}

// readSymbolNames collects the names of the symbols of b's file and of the
// file holding its DWARF (a separate debug file): every symbol type, TLS
// included (errno is one), each without its version and clone suffix; the
// identifiers inside mangled names are added too, since DWARF names a C++ or
// Rust variable by its plain name.
func readSymbolNames(b *symbols.Binary) (sn *symbolNames) {
	sn = &symbolNames{names: map[string]struct{}{}}
	defer func() {
		if recover() != nil { // a damaged file: fall back to reading DWARF
			sn = &symbolNames{}
		}
	}()
	files := []*elf.File{b.ELF()}
	if d := b.DWARFELF(); d != nil && d != b.ELF() {
		files = append(files, d)
	}
	add := func(syms []elf.Symbol) {
		for i := range syms {
			n := syms[i].Name
			if j := strings.IndexAny(n, "@."); j > 0 {
				n = n[:j]
			}
			if n == "" {
				continue
			}
			sn.names[n] = struct{}{}
			if strings.HasPrefix(n, "_Z") || strings.HasPrefix(n, "_R") {
				addMangledIdentifiers(sn.names, n)
			}
		}
	}
	for _, f := range files {
		if f == nil {
			continue
		}
		if syms, err := f.Symbols(); err == nil {
			sn.complete = true
			add(syms)
		}
		if syms, err := f.DynamicSymbols(); err == nil {
			add(syms)
		}
	}
	return sn
}

// addMangledIdentifiers adds every <length><identifier> run of a mangled
// name, reading a length at every digit (an identifier may end in digits:
// "12_GLOBAL__N_11x" holds "_GLOBAL__N_1" and "x"). It adds strings that
// are not names too, which is harmless: the set only has to include every
// name, not exclude every other.
func addMangledIdentifiers(set map[string]struct{}, m string) {
	for i := 0; i < len(m); i++ {
		n := 0
		for j := i; j < len(m) && m[j] >= '0' && m[j] <= '9' && n < 1<<20; j++ {
			n = n*10 + int(m[j]-'0')
			if n == 0 {
				break
			}
			if j+1+n <= len(m) {
				set[m[j+1:j+1+n]] = struct{}{}
			}
			// Rust v0: '_' separates a length from an identifier that
			// starts with a digit or '_'.
			if j+1 < len(m) && m[j+1] == '_' && j+2+n <= len(m) {
				set[m[j+2:j+2+n]] = struct{}{}
			}
		}
	}
}

// plainIdentifier reports whether name is a bare C identifier.
func plainIdentifier(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
