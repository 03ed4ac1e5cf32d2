package session

import (
	"strings"

	"github.com/sondedbg/sonde/modules"
)

// cloneBaseName drops a compiler clone suffix from an ELF symbol name
// (GCC's f_call.lto_priv.0, foo.constprop.0, foo.isra.0, foo.part.0; clang's
// foo.llvm.123) when DWARF has a function starting at the symbol's address:
// gdb's print symbol (<f_call>) names a pointer by the function's debug
// symbol when one starts at or after the ELF symbol, and DWARF names a clone
// by its origin. Without DWARF there, or for a part of a function that starts
// elsewhere (foo.cold), the ELF name stays, as in gdb. start is the symbol's
// run-time address.
func (s *Session) cloneBaseName(mods modules.List, name string, start uint64) string {
	dot := strings.IndexByte(name, '.')
	if dot <= 0 {
		return name
	}
	m := mods.ForAddress(start)
	if m == nil {
		return name
	}
	b, _ := s.Binary(m)
	if b == nil || !b.HasDWARF() {
		return name
	}
	frames, err := b.Lookup(start - m.Bias)
	if err != nil || len(frames) == 0 {
		return name
	}
	outer := frames[len(frames)-1]
	if outer.FromSymbolTable || outer.Start != start-m.Bias {
		return name
	}
	return name[:dot]
}
