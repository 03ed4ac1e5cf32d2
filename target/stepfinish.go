package target

// A step out of an inlined frame, as gdb's finish does it there: gdb has
// no return to wait for, so it steps in the caller's frame (its
// step_frame_id) with an empty line range and no current line, stepping
// over real calls, and applies its step logic (infrun.c's
// process_event_stop_test) at every stop. The stop is where that logic
// ends a step: at the first address of an inlined call the caller makes
// (shown at the call's line), at the start of a statement row outside the
// inlined frame, or — when the frame was left in the middle of a row — at
// the end of that row's line, as a next there would stop.

// stepFrame is the frame gdb compares stops with (its step frame id): the
// physical frame's CFA, the inline depth, and the call site of each
// inlined call down to it (the lines of the frames outside them).
type stepFrame struct {
	cfa   uint64
	depth int
	calls []InlineFrame
}

func frameAt(pos inlinePosition, cfa uint64, depth int) stepFrame {
	f := stepFrame{cfa: cfa, depth: depth}
	for k := 0; k < depth; k++ {
		f.calls = append(f.calls, pos.at(k))
	}
	return f
}

// holds reports whether pos (in the physical frame of CFA cfa) is in f or
// in calls inlined into it.
func (f stepFrame) holds(pos inlinePosition, cfa uint64) bool {
	if cfa != f.cfa || pos.deepest() < f.depth || pos.depth < f.depth {
		return false
	}
	for k, c := range f.calls {
		if o := pos.at(k); o.Line != c.Line || o.File != c.File {
			return false
		}
	}
	return true
}

// finishState is gdb's step state for a step out of an inlined frame: the
// step frame, the range of the row being stepped and its line (none at
// first: gdb's finish clears it).
type finishState struct {
	rows  LineRowAdvisor
	frame stepFrame
	r     LineRange
}

// startFinishInline prepares a step out of the inlined frame at depth
// pos.depth > 0 at pc; ok is false when the advisor cannot read rows.
func (s *stepper) startFinishInline(ia InlineAdvisor, pos inlinePosition, pc uint64) bool {
	ra, ok := s.advisor.(LineRowAdvisor)
	if !ok {
		return false
	}
	s.inline, s.origin = ia, pos
	s.finish = &finishState{rows: ra, frame: frameAt(pos, s.startCFA, pos.depth-1)}
	s.line = s.finishRange(pc)
	return true
}

// finishRange is how far the thread runs before the next look: to the end
// of pc's row (gdb looks at every instruction; the frame and the line
// change only where a row begins).
func (s *stepper) finishRange(pc uint64) LineRange {
	end := pc + 1
	if row, ok := s.finish.rows.LineRow(s.thread, pc); ok && row.End > pc {
		end = row.End
	}
	return LineRange{Start: pc, End: end}
}

// leftInline reports whether a step over that began in an inlined frame
// has left it at pc, into the function it was inlined into, and if so
// hands the rest of the step to gdb's row-by-row logic (decideFinish)
// from the frame it began in and the line it stepped: gdb stops there only
// at the start of a statement row; from the middle of a row it finishes
// that row's line, and from a row that is not a statement it goes on
// without a line, to stop at the next statement or inlined call (lua's
// f_luaopen, where init_registry's code resumes after a row of the
// caller's, stops at the call's line 235 as gdb's next does).
func (s *stepper) leftInline(pc uint64) bool {
	d := s.origin.depth
	if s.mode != ResumeStepOverLine || d == 0 || s.origin.frames == nil {
		return false
	}
	ra, ok := s.advisor.(LineRowAdvisor)
	if !ok {
		return false
	}
	pos, ok := inlineAt(s.inline, s.thread, pc)
	if !ok || pos.deepest() >= d {
		return false
	}
	from := s.origin.at(d)
	s.finish = &finishState{rows: ra, frame: frameAt(s.origin, s.startCFA, d), r: LineRange{File: from.File, Line: from.Line}}
	return true
}

// decideFinish is decide for a step out of an inlined frame, and for a
// next once it has left the inlined frame it began in (leftInline): gdb's
// checks, in its order, for a thread stopped at pc in the physical frame
// of CFA cfa.
func (s *stepper) decideFinish(t *Target, pc, cfa uint64, tmp **Breakpoint, asStep func()) (ResumeMode, ResumeOptions, bool) {
	f := s.finish
	stop := func() (ResumeMode, ResumeOptions, bool) {
		asStep()
		return 0, ResumeOptions{}, true
	}
	goOn := func() (ResumeMode, ResumeOptions, bool) {
		s.line = s.finishRange(pc)
		return ResumeStepOverRange, s.rangeOptions(), false
	}
	if f.r.Contains(pc) {
		return goOn() // still in the row being stepped
	}
	if cfa < f.frame.cfa {
		return s.runToReturn(t, tmp, asStep) // a real call: over it
	}
	pos, ok := inlineAt(s.inline, s.thread, pc)
	if !ok {
		return stop()
	}
	inFrame := pos.depth == f.frame.depth && f.frame.holds(pos, cfa)
	switch {
	case inFrame && pos.deepest() > pos.depth:
		// gdb: "stepped into inlined function": a next stops at a call
		// on another line than the one stepped (there is none at first).
		if call := pos.at(pos.depth); f.r.Line != 0 && call.Line == f.r.Line && call.File == f.r.File {
			return goOn()
		}
		return stop()
	case pos.depth > f.frame.depth && f.frame.holds(pos, cfa):
		// "stepping through inlined function": still in the inlined
		// call being finished (or another the step frame makes).
		return goOn()
	}
	row, ok := f.rows.LineRow(s.thread, pc)
	if !ok {
		return stop()
	}
	line := LineRange{Start: row.Start, End: row.End, File: row.File, Line: row.Line}
	if pc == row.Start && !line.SameLine(f.r) {
		// At a row of another line: a statement ends the step; else go
		// on, in the frame stopped in without a line if it is another.
		if row.IsStmt {
			return stop()
		}
		if inFrame {
			line.File, line.Line = f.r.File, f.r.Line
		} else {
			f.frame = frameAt(pos, cfa, pos.depth)
			line.File, line.Line = "", 0
		}
		f.r = line
		return goOn()
	}
	// In the middle of a row: step the rest of its line from this frame.
	f.frame, f.r = frameAt(pos, cfa, pos.depth), line
	return goOn()
}
