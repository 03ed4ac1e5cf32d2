package session

import (
	"errors"

	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/target"
)

var errNoCaller = errors.New("the innermost frame has no caller")

// Symbolize returns what a run-time address in c's process means: its module
// and the frames at it (innermost inlined call first), with addresses in the
// frames' Start made run-time. caller asks for gdb's caller convention (the
// lookup is made at pc-1).
func (s *Session) Symbolize(c *target.Context, pc uint64, caller bool) (*modules.Module, []symbols.Frame, error) {
	mods, err := s.Modules(c)
	if err != nil {
		return nil, nil, err
	}
	lookup := pc
	if caller && pc > 0 {
		lookup--
	}
	m := mods.ForAddress(lookup)
	if m == nil {
		return nil, nil, nil
	}
	b, err := s.Binary(m)
	if b == nil {
		return m, nil, err
	}
	frames, err := b.Lookup(lookup - m.Bias)
	for i := range frames {
		if frames[i].Start != 0 {
			frames[i].Start += m.Bias
		}
	}
	return m, frames, err
}
