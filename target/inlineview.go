package target

// How a stop presents the inlined calls that begin at the stopped pc, as gdb
// does (its inline_skipped_frames): a thread stopped at the first address of
// an inlined call is shown in the caller, on the line of the call, with the
// inlined frames hidden; a step into at that pc then enters one hidden frame
// without running the thread (gdb's step_into_inline_frame). The model keeps
// the count of hidden frames where gdb's rule is not the stop's default;
// session applies the rule (Session.HiddenInline) to the stacks every front
// end shows.

// inlineView is a thread's presentation of the inlined calls at its stop.
type inlineView struct {
	// set: hidden is the number of inlined frames beginning at the stop pc
	// the stop hides (innermost first), fixed by a step; cleared when the
	// thread runs.
	set    bool
	hidden int
	// instr: the thread's last resume was an instruction step, whose stop
	// hides nothing (gdb's stepi/nexti).
	instr bool
	// resumed: the thread was resumed through the model. A thread never
	// resumed (attached to, or in a core) hides nothing: gdb presents
	// inlined calls only at stops that end a resume.
	resumed bool
}

// InlineViewAdvisor is what a StepAdvisor may also implement so that line
// steps start from the frame the user sees: the number of inlined frames
// beginning at a stopped thread's pc that its stop hides (see
// Session.HiddenInline).
type InlineViewAdvisor interface {
	HiddenInline(thread *Context) int
}

// HiddenInline returns how many inlined frames beginning at the thread's
// stop pc the stop hides when a step fixed it (ok), or 0 with ok set after an
// instruction step or before any resume; ok is false when the stop's default
// rule applies.
func (c *Context) HiddenInline() (n int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.inline.set:
		return c.inline.hidden, true
	case c.inline.instr, !c.inline.resumed:
		return 0, true
	}
	return 0, false
}

// setHiddenInline fixes the number of hidden inlined frames of the thread's
// present stop.
func (c *Context) setHiddenInline(n int) {
	c.mu.Lock()
	c.inline.set, c.inline.hidden = true, n
	c.mu.Unlock()
}

// noteResume records what kind of resume the thread's next stop ends.
func (c *Context) noteResume(mode ResumeMode) {
	instr := mode == ResumeStepInto || mode == ResumeStepOver
	if c.kind == KindProcess {
		for _, th := range c.Children() {
			th.noteResume(ResumeContinue)
		}
		return
	}
	c.mu.Lock()
	c.inline.instr, c.inline.resumed = instr, true
	c.mu.Unlock()
}

// hiddenAt returns the number of inlined frames at the thread's stop pc its
// stop hides, asking the advisor for the default rule; without one, every
// inlined call beginning at pc (pos's view).
func (s *stepper) hiddenAt(pos inlinePosition) int {
	if va, ok := s.advisor.(InlineViewAdvisor); ok {
		n := va.HiddenInline(s.thread)
		if n > pos.deepest() {
			n = pos.deepest()
		}
		return n
	}
	return pos.deepest() - pos.depth
}

// stepIntoHidden is a step into at a pc where inlined frames are hidden:
// the next one is entered without running the thread, and the step ends at
// once (a Started and a Stopped event, as for any step).
func (t *Target) stepIntoHidden(thread *Context, hidden int, pc uint64) {
	thread.setRunning() // no other resume until the stop is reported
	go func() {
		t.Started(thread)
		thread.setHiddenInline(hidden - 1)
		t.Stopped(thread, &SuspendReason{Kind: ReasonStep}, pc)
	}()
}

// intoInline applies gdb's rule for a step into that ends at the first
// address of inlined calls in the frame it began in: when the call is on the
// line the step began on, the step goes down into the (outermost) inlined
// call; otherwise the stop is at the call, all of them hidden (the default).
func (s *stepper) intoInline(pc uint64) {
	if s.mode != ResumeStepIntoLine || s.origin.frames == nil {
		return
	}
	ia, ok := s.advisor.(InlineAdvisor)
	if !ok {
		return
	}
	pos, ok := inlineAt(ia, s.thread, pc)
	if !ok || pos.depth == pos.deepest() || pos.depth != s.origin.depth {
		return
	}
	if cfa, err := s.advisor.FrameCFA(s.thread); err != nil || cfa != s.originCFA {
		return
	}
	call, from := pos.at(pos.depth), s.origin.at(s.origin.depth)
	if call.Line == from.Line && call.File == from.File {
		s.thread.setHiddenInline(pos.deepest() - pos.depth - 1)
	}
}
