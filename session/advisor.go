package session

import "github.com/sondedbg/sonde/target"

// LineRange returns the address range of the line-table block holding pc in
// thread's process: the addresses that belong to the same source line as pc,
// contiguous with it (for stepping over or into a line).
func (s *Session) LineRange(thread *target.Context, pc uint64) (start, end uint64, ok bool) {
	mods, err := s.Modules(thread)
	if err != nil {
		return 0, 0, false
	}
	m := mods.ForAddress(pc)
	if m == nil {
		return 0, 0, false
	}
	b, _ := s.Binary(m)
	if b == nil {
		return 0, 0, false
	}
	lo, hi, ok := lineBlock(b, pc-m.Bias)
	if !ok {
		return 0, 0, false
	}
	return lo + m.Bias, hi + m.Bias, true
}
