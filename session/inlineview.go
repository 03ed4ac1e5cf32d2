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
// the chain whose code range starts at pc).
func (s *Session) inlineStarts(thread *target.Context, pc uint64) ([]symbols.Frame, int) {
	_, frames, err := s.Symbolize(thread, pc, false)
	if err != nil {
		return nil, 0
	}
	n := 0
	for n < len(frames)-1 && frames[n].Inlined && frames[n].Start == pc {
		n++
	}
	return frames, n
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
// where inlined calls begin, end when there is none: gdb's step looks at
// every row it reaches, and stops at an inlined call's entry in the stepping
// frame even where the row is not a statement.
func (s *Session) inlineEntryBefore(thread *target.Context, pc, end uint64) uint64 {
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
		if _, n := s.inlineStarts(thread, a); n > 0 {
			return a
		}
	}
	return end
}
