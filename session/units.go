package session

import (
	"github.com/sondedbg/sonde/symbols"
)

// CompileUnit returns the compilation unit (its source name, compilation
// directory and DWARF version) whose code covers the runtime address pc of
// module m, for front ends that name source files as gdb does. ok is false
// when m has no readable symbols or no unit covers pc.
func (s *Session) CompileUnit(m *Module, pc uint64) (u symbols.CompileUnit, ok bool) {
	if m == nil {
		return u, false
	}
	b, err := s.Binary(m)
	if err != nil || b == nil {
		return u, false
	}
	return b.CompileUnit(pc - m.Bias)
}
