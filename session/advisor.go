package session

import (
	"bytes"
	"strings"

	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/unwind"
)

// LineRange returns the line-table block holding pc in thread's process, for
// line stepping: the statement rows of pc's line that are contiguous with it,
// up to the first row after pc where inlined calls begin (a step stops there
// to present them as gdb does: see HiddenInline).
func (s *Session) LineRange(thread *target.Context, pc uint64) (target.LineRange, bool) {
	r, ok := s.SourceLineRange(thread, pc)
	if ok {
		r.End = s.inlineEntryBefore(thread, pc, r.End)
	}
	return r, ok
}

// SourceLineRange returns the line-table block holding pc in thread's
// process: the statement rows of pc's line that are contiguous with it.
func (s *Session) SourceLineRange(thread *target.Context, pc uint64) (target.LineRange, bool) {
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
	s.inlineEntries(thread, pc, frames)
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

// PrologueEnd returns where the prologue of the function entered at entry
// ends, the way gdb finds it: at the function's second statement row in the
// line table — the start of its second line, or, in a function written on
// one line, the row the compiler starts after the prologue. For GCC code gdb
// trusts that row only when the function sets up a frame (HasPrologue):
// optimized GCC code has no prologue and its first line is already the body.
// LLVM (clang, rustc) always starts a row after the prologue, frame pointer
// or not, so its code is skipped by the line table alone. ok is false without
// a prologue to skip, without line information, or when no second row lies
// inside the function.
func (s *Session) PrologueEnd(c *target.Context, entry uint64) (uint64, bool) {
	mods, err := s.Modules(c)
	if err != nil {
		return 0, false
	}
	m := mods.ForAddress(entry)
	if m == nil {
		return 0, false
	}
	b, _ := s.Binary(m)
	if b == nil {
		return 0, false
	}
	if !producedByLLVM(b, entry-m.Bias) && !s.HasPrologue(c, entry) {
		return 0, false
	}
	end, ok := nextStatementRow(b, entry-m.Bias)
	if !ok {
		return 0, false
	}
	end += m.Bias
	// Still the function entered at entry (a function of one row would give
	// the next function's first).
	_, frames, err := s.Symbolize(c, end, false)
	if err != nil || len(frames) == 0 || frames[len(frames)-1].Start != entry {
		return 0, false
	}
	return end, true
}

// producedByLLVM reports whether the unit holding the link-time address pc
// was compiled by an LLVM back end: clang ("clang version …") or rustc
// ("clang LLVM (rustc version …)"), as gdb's producer_is_llvm decides.
func producedByLLVM(b *symbols.Binary, pc uint64) bool {
	u, ok := b.CompileUnit(pc)
	if !ok {
		return false
	}
	p := u.Producer
	return strings.HasPrefix(p, "clang ") || strings.Contains(p, " clang version ") || strings.HasPrefix(p, "Apple clang ")
}

// nextStatementRow returns the address of the first statement row after pc
// in pc's line-table sequence (link-time addresses).
func nextStatementRow(b *symbols.Binary, pc uint64) (uint64, bool) {
	rows, err := b.LineSequence(pc)
	if err != nil {
		return 0, false
	}
	for _, r := range rows {
		if r.Addr > pc && r.IsStmt && !r.EndSequence {
			return r.Addr, true
		}
	}
	return 0, false
}

// AfterPrologue returns where a breakpoint on the function entered at entry
// stops the way gdb's `break FUNCTION` does: past a frame-setup prologue (see
// PrologueEnd), so parameters are in place; entry itself when the function
// has no such prologue or no line information.
func (s *Session) AfterPrologue(c *target.Context, entry uint64) uint64 {
	if end, ok := s.PrologueEnd(c, entry); ok {
		return end
	}
	return entry
}

// Trampoline reports whether pc is in linker-made code between a call and the
// function it calls, for stepping into calls through the PLT: a PLT section
// of its module (.plt, .plt.sec, .plt.got), or the dynamic linker, whose
// whole code is given (its lazy resolver runs in it and jumps out to the
// function).
func (s *Session) Trampoline(thread *target.Context, pc uint64) (start, end uint64, kind target.TrampolineKind) {
	mods, err := s.Modules(thread)
	if err != nil {
		return 0, 0, target.NotTrampoline
	}
	m := mods.ForAddress(pc)
	if m == nil {
		return 0, 0, target.NotTrampoline
	}
	if m.Interpreter {
		for _, r := range m.Regions {
			if r.Contains(pc) && r.Perm&target.PermExec != 0 {
				return r.Addr, r.Addr + r.Size, target.TrampolineLinker
			}
		}
		return 0, 0, target.NotTrampoline
	}
	b, _ := s.Binary(m)
	if b == nil || b.ELF() == nil {
		return 0, 0, target.NotTrampoline
	}
	link := pc - m.Bias
	for _, name := range []string{".plt", ".plt.sec", ".plt.got"} {
		if sec := b.ELF().Section(name); sec != nil && link >= sec.Addr && link-sec.Addr < sec.Size {
			return sec.Addr + m.Bias, sec.Addr + sec.Size + m.Bias, target.TrampolinePLT
		}
	}
	return 0, 0, target.NotTrampoline
}

// SignalFrames reports whether a stopped thread's innermost frame is the
// kernel's signal trampoline, or was entered by a signal (its caller is the
// trampoline): for line stepping through signal handlers.
func (s *Session) SignalFrames(thread *target.Context) (trampoline, handler bool) {
	s.withUnwinder(thread, nil, func(u *unwind.Unwinder) error {
		// The engine classifies a frame when it finds its caller.
		trampoline = u.Frame().Kind == unwind.KindSignal
		if !trampoline && u.Step() {
			handler = u.Frame().Kind == unwind.KindSignal
		}
		return nil
	})
	return trampoline, handler
}
