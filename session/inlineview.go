package session

import (
	"strings"

	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/unwind"
)

// HiddenInline returns how many inlined frames beginning at a stopped
// thread's pc its stop hides, by gdb's rule (inline_skipped_frames): the
// count a step fixed (target.Context.HiddenInline); at a breakpoint set on a
// function by name, the inlined calls inside that function; at any other
// breakpoint none (gdb shows the innermost function at a line or address
// breakpoint); at other stops every inlined call that begins at pc, so that
// the stop is presented in the caller, on the line of the call.
func (s *Session) HiddenInline(thread *target.Context) int {
	_, reason, pc := thread.State()
	frames := s.inlineStarts(thread, pc)
	n := len(frames)
	if k, ok := thread.HiddenInline(); ok {
		return min(k, n)
	}
	if n == 0 || reason == nil || reason.Kind != target.ReasonBreakpoint || len(reason.Breakpoints) == 0 {
		return n
	}
	hide := n
	for _, bp := range reason.Breakpoints {
		fn := bp.Spec.Function
		if fn == "" {
			return 0
		}
		k := 0
		for k < n && !functionNamed(frames[k], fn) {
			k++
		}
		hide = min(hide, k)
	}
	return hide
}

// inlineStarts returns the inlined frames at pc that begin there, innermost
// first (the leading frames of the inline chain whose code range starts at
// pc).
func (s *Session) inlineStarts(thread *target.Context, pc uint64) []symbols.Frame {
	_, frames, err := s.Symbolize(thread, pc, false)
	if err != nil {
		return nil
	}
	n := 0
	for n < len(frames)-1 && frames[n].Inlined && frames[n].Start == pc {
		n++
	}
	return frames[:n]
}

// functionNamed reports whether f is the function a breakpoint by the name
// fn was set on: the name as printed (C++ and Rust names carry their
// parameters) or the linkage name.
func functionNamed(f symbols.Frame, fn string) bool {
	return f.Function == fn || f.LinkageName == fn ||
		strings.HasPrefix(f.Function, fn) && strings.HasPrefix(f.Function[len(fn):], "(")
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
		if len(s.inlineStarts(thread, a)) > 0 {
			return a
		}
	}
	return end
}
