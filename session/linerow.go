package session

import (
	"github.com/sondedbg/sonde/target"
)

// LineRow returns the line-table row holding pc in thread's process as
// gdb's find_pc_line reads the table, for the steps that follow gdb's
// logic row by row (a step out of an inlined frame): the last row at or
// before pc — among rows at one address the last statement row, when one
// is — and its code up to the next row's address. ok is false where the
// row is line 0 (code of no line) or pc has no line information.
func (s *Session) LineRow(thread *target.Context, pc uint64) (target.LineRow, bool) {
	mods, err := s.Modules(thread)
	if err != nil {
		return target.LineRow{}, false
	}
	m := mods.ForAddress(pc)
	if m == nil {
		return target.LineRow{}, false
	}
	b, _ := s.Binary(m)
	if b == nil {
		return target.LineRow{}, false
	}
	link := pc - m.Bias
	rows, err := b.LineSequence(link)
	if err != nil || len(rows) == 0 {
		return target.LineRow{}, false
	}
	best := -1
	for k, r := range rows {
		if r.Addr > link {
			break
		}
		if !r.EndSequence {
			best = k
		}
	}
	if best < 0 || rows[best].Line == 0 {
		return target.LineRow{}, false
	}
	k := best
	for k > 0 && !rows[k].IsStmt && rows[k-1].Addr == rows[k].Addr && rows[k-1].Line != 0 {
		k--
	}
	if rows[k].IsStmt {
		best = k
	}
	r := rows[best]
	row := target.LineRow{Start: r.Addr + m.Bias, End: rows[len(rows)-1].Addr + m.Bias, File: r.File, Line: r.Line, IsStmt: r.IsStmt}
	for _, n := range rows[best+1:] {
		if n.Addr > r.Addr {
			row.End = n.Addr + m.Bias
			break
		}
	}
	return row, true
}
