package session

import (
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/variables"
)

// maxPreparedStops bounds the addresses PrepareStops reads ahead for.
const maxPreparedStops = 16

// PrepareStops reads ahead what a stop at one of the run-time addresses
// addrs of c's process (a debugger's breakpoints, before the program runs
// to them) needs for its innermost frame: the frames at the address
// (their unit's DIEs, scopes and line table) and the scopes of its
// variables with their types (variables.Reader.ScopesAt, which the Reader
// keeps). A launched program's first stop is most often at a breakpoint,
// and its first round asks for these right away (a C++ frame's std::string
// and class types were half of the stop's prefetch). Everything it reads is
// kept where the stop's lookups find it (a lookup under way meanwhile
// waits for the same decoding, never repeats it); an address it cannot
// resolve is skipped.
func (s *Session) PrepareStops(c *target.Context, addrs []uint64) {
	mods, err := s.Modules(c)
	if err != nil {
		return
	}
	if len(addrs) > maxPreparedStops {
		addrs = addrs[:maxPreparedStops]
	}
	for _, a := range addrs {
		m := mods.ForAddress(a)
		if m == nil {
			continue
		}
		b, _ := s.Binary(m)
		if b == nil {
			continue
		}
		pc := a - m.Bias
		b.Lookup(pc)
		if !b.HasDWARF() {
			continue
		}
		if r, err := variables.For(b); err == nil && r != nil {
			r.ScopesAt(pc)
		}
	}
}
