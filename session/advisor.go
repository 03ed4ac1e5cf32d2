package session

import (
	"bytes"

	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/target"
)

// LineRange returns the line-table block holding pc in thread's process, for
// line stepping: the statement rows of pc's line that are contiguous with it.
func (s *Session) LineRange(thread *target.Context, pc uint64) (target.LineRange, bool) {
	mods, err := s.Modules(thread)
	if err != nil {
		return target.LineRange{}, false
	}
	m := mods.ForAddress(pc)
	if m == nil {
		return target.LineRange{}, false
	}
	b, _ := s.Binary(m)
	if b == nil {
		return target.LineRange{}, false
	}
	r, ok := lineBlock(b, pc-m.Bias)
	if !ok {
		return r, false
	}
	r.Start += m.Bias
	r.End += m.Bias
	return r, true
}

// lineBlock finds the block of pc's line in a symbol file (link-time
// addresses), the way gdb bounds a step: among the statement (is_stmt) rows of
// pc's sequence, the last one at or before pc gives the line; the block grows
// over neighbouring statement rows of the same line and ends at the next
// statement row of another line or at the end of the sequence. Line 0 (code
// the compiler attributes to no line) has no block.
func lineBlock(b *symbols.Binary, pc uint64) (target.LineRange, bool) {
	rows, err := b.LineSequence(pc)
	if err != nil || len(rows) == 0 {
		return target.LineRange{}, false
	}
	at := -1
	for k, r := range rows {
		if r.Addr > pc {
			break
		}
		if r.IsStmt && !r.EndSequence {
			at = k
		}
	}
	if at < 0 || rows[at].Line == 0 {
		return target.LineRange{}, false
	}
	line, file := rows[at].Line, rows[at].File
	same := func(r symbols.LineEntry) bool { return r.Line == line && r.File == file }
	lr := target.LineRange{Start: rows[at].Addr, End: rows[len(rows)-1].Addr, File: file, Line: line}
	for k := at - 1; k >= 0; k-- {
		if !rows[k].IsStmt {
			continue
		}
		if !same(rows[k]) {
			break
		}
		lr.Start = rows[k].Addr
	}
	for k := at + 1; k < len(rows); k++ {
		if rows[k].EndSequence || (rows[k].IsStmt && !same(rows[k])) {
			lr.End = rows[k].Addr
			break
		}
	}
	if lr.End <= lr.Start {
		return target.LineRange{}, false
	}
	return lr, true
}

// InlineFrames returns the source frames at pc in thread's process, innermost
// first (inlined calls, then the function they were inlined into), so that line
// stepping can treat inlined calls as gdb does.
func (s *Session) InlineFrames(thread *target.Context, pc uint64) []target.InlineFrame {
	_, frames, err := s.Symbolize(thread, pc, false)
	if err != nil || len(frames) == 0 {
		return nil
	}
	out := make([]target.InlineFrame, len(frames))
	for i, f := range frames {
		out[i] = target.InlineFrame{File: f.File, Line: f.Line, Inlined: f.Inlined, Start: f.Start}
	}
	return out
}

// HasPrologue reports whether the function entered at pc sets up a frame
// pointer first (endbr64?, push %rbp, mov %rsp,%rbp on x86-64), as gdb checks
// before skipping a GCC function's first line when stepping into it:
// optimized code has no such prologue and its first line is already the body.
// Other architectures: true (the first line is skipped).
func (s *Session) HasPrologue(thread *target.Context, pc uint64) bool {
	if s.target.Arch().Name != "x86_64" {
		return true
	}
	var b [8]byte
	n, _ := thread.ReadMemory(pc, b[:])
	p := b[:n]
	p = bytes.TrimPrefix(p, []byte{0xf3, 0x0f, 0x1e, 0xfa}) // endbr64
	return bytes.HasPrefix(p, []byte{0x55, 0x48, 0x89, 0xe5})
}

// AfterPrologue returns where a breakpoint on the function entered at entry
// stops the way gdb's `break FUNCTION` does: past a frame-setup prologue, at
// the start of the function's second line, so parameters are in place; entry
// itself when the function has no such prologue or no line information.
func (s *Session) AfterPrologue(c *target.Context, entry uint64) uint64 {
	if !s.HasPrologue(c, entry) {
		return entry
	}
	r, ok := s.LineRange(c, entry)
	if !ok || r.Start != entry || r.End <= entry {
		return entry
	}
	return r.End
}
