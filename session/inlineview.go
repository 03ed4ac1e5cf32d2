package session

import (
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/unwind"
)

// HiddenInline returns how many inlined frames beginning at a stopped
// thread's pc its stop hides, by gdb's rule (inline_skipped_frames): the
// count a step fixed (target.Context.HiddenInline: none after an
// instruction step, or in a thread never resumed — attached to, or of a
// core — whose stop gdb does not process); at a breakpoint on a
// function by name, at the function's entry all of them (the stop is in the
// function), past its prologue all but the outermost inlined call (gdb
// gives such a location the inlined function the prologue's end is in); at
// other breakpoints none (gdb shows the innermost function at a line or an
// address); at other stops every inlined call that begins at pc, so that
// the stop is presented in the caller, on the line of the call.
func (s *Session) HiddenInline(thread *target.Context) int {
	_, reason, pc := thread.State()
	k, fixed := thread.HiddenInline()
	if fixed && k == 0 {
		return 0
	}
	frames, n := s.inlineStarts(thread, pc)
	if fixed {
		return min(k, n)
	}
	if n == 0 || reason == nil || reason.Kind != target.ReasonBreakpoint {
		return n
	}
	hide := n
	for _, bp := range reason.Breakpoints {
		switch {
		case !bp.Spec.Function:
			return 0
		case frames[len(frames)-1].Start != pc:
			hide = min(hide, len(frames)-2)
		}
	}
	return hide
}

// inlineStarts returns the source frames at pc, innermost first, and how
// many of them are inlined calls that begin there (the leading frames of
// the chain entered at pc: see enteredAt).
func (s *Session) inlineStarts(thread *target.Context, pc uint64) ([]symbols.Frame, int) {
	_, frames, err := s.Symbolize(thread, pc, false)
	if err != nil {
		return nil, 0
	}
	return frames, s.enteredAt(thread, pc, frames)
}

// enteredAt returns how many of the leading inlined frames at pc (innermost
// first) are entered at pc, by gdb's rule (block_starting_point_at): one of
// their code ranges starts at pc and the instruction before pc is not in the
// same inlined call. GCC splits a call's code into ranges that abut
// ([a, b) and [b, c)): b is in the middle of the call, not an entry, and a
// step that reaches it is still in the inlined frame.
func (s *Session) enteredAt(thread *target.Context, pc uint64, frames []symbols.Frame) int {
	n := 0
	for n < len(frames)-1 && frames[n].Inlined && frames[n].Start == pc {
		n++
	}
	if n == 0 || pc == 0 {
		return n
	}
	_, before, err := s.Symbolize(thread, pc-1, false)
	if err != nil {
		return n
	}
	// Frames [0, len-same) differ at pc-1: those entered here.
	return min(n, len(frames)-commonCalls(frames, before))
}

// commonCalls returns how many frames two chains of source frames
// (innermost first, at two addresses) share from the outermost: the same
// function, and for each inlined call the same function called from the
// same site (the line of the frame outside it).
func commonCalls(x, y []symbols.Frame) int {
	same := 0
	for same < len(x) && same < len(y) {
		a, b := x[len(x)-1-same], y[len(y)-1-same]
		if a.Function != b.Function || a.Inlined != b.Inlined {
			break
		}
		if same > 0 {
			ca, cb := x[len(x)-same], y[len(y)-same]
			if ca.Line != cb.Line || ca.File != cb.File {
				break
			}
		}
		same++
	}
	return same
}

// inlineEntries applies enteredAt to the frames at pc for InlineFrames
// (target compares an inlined frame's Start with pc): Start is cleared on
// the inlined frames pc is not an entry of.
func (s *Session) inlineEntries(thread *target.Context, pc uint64, frames []symbols.Frame) {
	n := s.enteredAt(thread, pc, frames)
	for i := n; i < len(frames)-1 && frames[i].Inlined && frames[i].Start == pc; i++ {
		frames[i].Start = 0
	}
}

// hideInline drops from a backtrace the inlined frames its thread's stop
// hides (HiddenInline): the innermost frames, all of physical frame 0.
func (s *Session) hideInline(thread *target.Context, t *unwind.Trace) {
	if len(t.Frames) < 2 || t.Frames[1].Physical != 0 {
		return // no inlined frame at pc
	}
	if _, _, pc := thread.State(); pc != t.Frames[0].PC {
		return // a walk from other registers than the stop's
	}
	n := s.HiddenInline(thread)
	if n <= 0 || n >= len(t.Frames) || t.Frames[n].Physical != 0 {
		return
	}
	t.Frames, t.HiddenInline = t.Frames[n:], n
	for i := range t.Frames {
		t.Frames[i].Index = i
	}
}

// inlineEntryBefore returns the first line-table row address in (pc, end)
// where inlined calls begin, or where an inlined call pc is in has been
// left; end when there is none: gdb's step looks at every row it reaches,
// and stops at an inlined call's entry in the stepping frame even where the
// row is not a statement, and a step in an inlined call notices where its
// code gives way to its caller's (GCC interleaves them: lua's
// init_registry, a row of f_luaopen, then init_registry again).
func (s *Session) inlineEntryBefore(thread *target.Context, pc, end uint64) uint64 {
	var at []symbols.Frame
	if _, frames, err := s.Symbolize(thread, pc, false); err == nil && len(frames) > 1 && frames[0].Inlined {
		at = frames
	}
	mods, err := s.Modules(thread)
	if err != nil {
		return end
	}
	m := mods.ForAddress(pc)
	if m == nil {
		return end
	}
	b, _ := s.Binary(m)
	if b == nil {
		return end
	}
	rows, err := b.LineSequence(pc - m.Bias)
	if err != nil {
		return end
	}
	last := uint64(0)
	for _, r := range rows {
		a := r.Addr + m.Bias
		if a <= pc || a == last {
			continue
		}
		if a >= end {
			break
		}
		last = a
		frames, n := s.inlineStarts(thread, a)
		if n > 0 || at != nil && commonCalls(at, frames) < len(at) {
			return a
		}
	}
	return end
}
