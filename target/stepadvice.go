package target

// What line stepping asks of the layers that know the program (symbols,
// unwinding): the optional parts of a StepAdvisor, and the stepper's use of
// them. A StepAdvisor without them still steps lines; with them, steps
// treat inlined calls, prologues, PLT stubs and signal handlers as gdb does.

// InlineAdvisor is what a StepAdvisor may also implement so that line steps
// treat inlined calls as gdb does: a step over runs through the code of a
// function inlined into the stepping frame instead of stopping on its lines.
type InlineAdvisor interface {
	// InlineFrames returns the source frames at pc, innermost first: each
	// inlined call (Inlined set, Start the first address of its code range)
	// and last the function it was inlined into. Line is the frame's line at
	// pc; for an outer frame, the line of the inlined call it is in.
	InlineFrames(thread *Context, pc uint64) []InlineFrame
}

// PrologueAdvisor is what a StepAdvisor may also implement so that a step
// into a function runs past its frame-setup prologue and no further (gdb's
// rule for GCC code): to the function's second line-table row, which in a
// one-line function is still its first line. Without it the whole first
// line is skipped.
type PrologueAdvisor interface {
	// PrologueEnd returns where the prologue of the function entered at pc
	// ends; ok is false when the function does not begin by setting up a
	// frame (optimized code, whose first line is already the body).
	PrologueEnd(thread *Context, pc uint64) (end uint64, ok bool)
}

// TrampolineAdvisor is what a StepAdvisor may also implement so that a step into a
// call through a PLT stub goes on, through the dynamic linker's lazy
// resolver if the binding is not made yet, into the function the call
// reaches, as gdb's does; without it such a call is stepped over.
type TrampolineAdvisor interface {
	// Trampoline returns the code [start, end) around pc when pc is in code
	// the linkers put between a call and the function it calls: a module's
	// PLT (TrampolinePLT) or the dynamic linker (TrampolineLinker).
	Trampoline(thread *Context, pc uint64) (start, end uint64, kind TrampolineKind)
}

// TrampolineKind says which code between a call and its callee (gdb's
// "solib trampolines") an address is in.
type TrampolineKind uint8

const (
	NotTrampoline    TrampolineKind = iota
	TrampolinePLT                   // a PLT stub (or PLT0)
	TrampolineLinker                // the dynamic linker: its lazy-binding resolver after a PLT stub
)

// maxGlueHops bounds the glue a step into goes through for one call.
const maxGlueHops = 16

// SignalAdvisor is what a StepAdvisor may also implement so that line steps
// treat signal handlers as gdb does: a step begun at a signal stop, whose
// signal the resume delivers, stops at the handler's first instruction; a
// step that returns from a handler goes on through the kernel's signal
// trampoline to the code the signal interrupted.
type SignalAdvisor interface {
	// SignalFrames reports whether the innermost frame is the signal
	// trampoline (trampoline), or was entered by the delivery of a signal
	// (handler: its caller is the trampoline).
	SignalFrames(thread *Context) (trampoline, handler bool)
}

// LineRowAdvisor is what a StepAdvisor may also implement so that a step
// out of an inlined frame follows gdb's finish there, which steps row by
// row through the line table (see finishInline).
type LineRowAdvisor interface {
	// LineRow returns the line-table row holding pc as gdb's find_pc_line
	// reads it: the last row at or before pc (among rows at one address
	// the last statement row), up to the next row's address; ok is false
	// for line 0 or no line information.
	LineRow(thread *Context, pc uint64) (LineRow, bool)
}

// LineRow is one row of a line table and the code it covers.
type LineRow struct {
	Start, End uint64
	File       string
	Line       int
	IsStmt     bool
}

// InlineFrame is one source frame at an address.
type InlineFrame struct {
	File    string
	Line    int
	Inlined bool
	Start   uint64
}

// inlinePosition is where pc stands in the inline tree, as gdb sees it: the
// frames at pc, and the depth (0 = the real function) of the frame a step
// starting at pc steps in. gdb hides inlined calls at their first address, so
// a stop there is in the caller, on the line of the call.
type inlinePosition struct {
	frames []InlineFrame
	depth  int
}

func inlineAt(adv InlineAdvisor, thread *Context, pc uint64) (inlinePosition, bool) {
	frames := adv.InlineFrames(thread, pc)
	if len(frames) == 0 {
		return inlinePosition{}, false
	}
	hidden := 0
	for hidden < len(frames)-1 && frames[hidden].Inlined && frames[hidden].Start == pc {
		hidden++
	}
	return inlinePosition{frames: frames, depth: len(frames) - 1 - hidden}, true
}

// at returns the frame of depth d (0 = the real function).
func (p inlinePosition) at(d int) InlineFrame { return p.frames[len(p.frames)-1-d] }

// deepest is the depth of the innermost frame at pc.
func (p inlinePosition) deepest() int { return len(p.frames) - 1 }

// throughGlue goes on with a step into that entered linker glue (a PLT
// stub, then perhaps the dynamic linker resolving the binding): it steps
// through the glue's code until the call reaches its function. Code the
// resolver calls (an IFUNC's selector) runs to its return. ok is false when
// pc is not in glue (or the step has been through too much of it).
func (s *stepper) throughGlue(t *Target, pc uint64, tmp **Breakpoint, asStep func()) (ResumeMode, ResumeOptions, bool) {
	ga, ok := s.advisor.(TrampolineAdvisor)
	if !ok || s.glueHops >= maxGlueHops {
		return 0, ResumeOptions{}, false
	}
	lo, hi, kind := ga.Trampoline(s.thread, pc)
	switch {
	case kind == TrampolinePLT || kind == TrampolineLinker && s.inGlue:
		s.glueHops++
		s.inGlue = true
		return ResumeStepIntoRange, ResumeOptions{RangeStart: lo, RangeEnd: hi, Count: 1}, true
	case s.inGlue:
		if ra, _, err := s.advisor.Caller(s.thread); err == nil {
			if _, _, k := ga.Trampoline(s.thread, ra); k == TrampolineLinker {
				// Called by the resolver, not the function the call
				// reaches: back into the resolver.
				s.glueHops++
				next, opts, done := s.runToReturn(t, tmp, asStep)
				return next, opts, !done
			}
		}
	}
	s.inGlue = false
	return 0, ResumeOptions{}, false
}

// prologueEnd returns where a step into the function entered at pc, whose
// first line block is first, stops skipping; ok is false when it does not
// skip.
func (s *stepper) prologueEnd(pc uint64, first LineRange) (uint64, bool) {
	if pa, ok := s.advisor.(PrologueAdvisor); ok {
		return pa.PrologueEnd(s.thread, pc)
	}
	return first.End, true
}

// signalFrames asks the advisor whether the thread is in the signal
// trampoline, or in a frame a signal's delivery entered (see SignalAdvisor).
func (s *stepper) signalFrames() (trampoline, handler bool) {
	if sa, ok := s.advisor.(SignalAdvisor); ok {
		return sa.SignalFrames(s.thread)
	}
	return false, false
}

// decideInline applies gdb's view of inlined calls to a step over that stopped
// in the frame it began in: code of a call inlined there is stepped through
// (its lines are not the stepping frame's), except that the first address of
// such a call is a new line of the caller (the call's line) when that line is
// not the one being stepped. ok is false when the ordinary rules apply.
func (s *stepper) decideInline(st stepStop, here LineRange, asStep func()) (ResumeMode, ResumeOptions, bool, bool) {
	pos, ok := inlineAt(s.inline, s.thread, st.pc)
	if !ok {
		return 0, ResumeOptions{}, false, false
	}
	d := s.origin.depth
	if s.mode == ResumeStepOut {
		if pos.deepest() < d {
			asStep() // out of the inlined call
			return 0, ResumeOptions{}, true, true
		}
		s.line = here
		return s.rangeMode(), s.rangeOptions(), false, true
	}
	if s.mode == ResumeStepIntoLine {
		return s.decideInlineInto(st, pos, asStep)
	}
	switch {
	case pos.deepest() > d && pos.depth <= d:
		// At the first address of a call inlined into the stepping frame.
		call := pos.at(d)
		if call.Line != s.origin.at(d).Line || call.File != s.origin.at(d).File {
			asStep()
			return 0, ResumeOptions{}, true, true
		}
		s.line = here
		return s.rangeMode(), s.rangeOptions(), false, true
	case pos.depth > d:
		// Inside an inlined call: not a line of the stepping frame.
		s.line = here
		return s.rangeMode(), s.rangeOptions(), false, true
	case pos.deepest() < d:
		// Left the inlined function the step began in: like a return.
		asStep()
		return 0, ResumeOptions{}, true, true
	}
	if f := pos.at(d); f.Line == s.origin.at(d).Line && f.File == s.origin.at(d).File {
		// Back on the line the step began on (after an inlined call in it).
		s.line = here
		return s.rangeMode(), s.rangeOptions(), false, true
	}
	return 0, ResumeOptions{}, false, false
}

// decideInlineInto is decideInline for a step into (gdb's "stepped into
// inlined function" and "stepping through inlined function"): it stops at
// the first address of inlined calls made by the stepping frame (intoInline
// then decides which frame the stop shows) and in an inlined call the
// stepping frame made. Out of the inlined function the step began in, the
// step goes on in the frame it is in (gdb refreshes its step frame), with
// no line of its own unless it is still on the line it stepped: the next
// line start or inlined call it reaches ends the step. Elsewhere the line
// rules apply. The inline depth stands for gdb's frame identity.
func (s *stepper) decideInlineInto(st stepStop, pos inlinePosition, asStep func()) (ResumeMode, ResumeOptions, bool, bool) {
	d := s.origin.depth
	switch {
	case pos.deepest() > pos.depth && pos.depth == d, pos.depth > d:
		asStep()
		return 0, ResumeOptions{}, true, true
	case pos.depth < d:
		f := pos.at(pos.depth)
		s.origin, s.insn = pos, pos.depth > 0
		if f.Line != s.line.Line || f.File != s.line.File {
			s.origin.frames = append([]InlineFrame(nil), pos.frames...)
			s.origin.frames[len(pos.frames)-1-pos.depth].Line = 0
			s.line = LineRange{}
		}
	}
	return 0, ResumeOptions{}, false, false
}
