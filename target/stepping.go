package target

import (
	"fmt"
	"sync"
)

// Line stepping and step-out are built here, once, on top of each backend's
// instruction and range stepping and the StepAdvisor that the symbols and unwind
// layers install. A stepping thread's intermediate stops and starts are kept from
// listeners: a client sees one Started when the step begins and one Stopped
// ("Step", or whatever interrupted it) when it ends, as TCF expects.

// lineModes are the modes implemented here rather than by backends.
var lineModes = ResumeModes(0).With(ResumeStepOverLine).With(ResumeStepIntoLine).With(ResumeStepOut)

// stepModesNeeded are the backend primitives line stepping is built from.
var stepModesNeeded = ResumeModes(0).With(ResumeContinue).With(ResumeStepOverRange).With(ResumeStepIntoRange)

// maxStepRounds bounds one line step (each round is one backend stop), so a step
// over a line that loops forever still ends, reported as a step.
const maxStepRounds = 100000

type stepper struct {
	thread  *Context
	mode    ResumeMode
	advisor StepAdvisor
	stops   chan stepStop
	// startCFA is the CFA of the frame the step began in; line the line block
	// being stepped.
	startCFA uint64
	line     LineRange
	// enteredCallee is set once a step into has entered a callee and is
	// running past its prologue, so the next stop in that callee ends the
	// step.
	enteredCallee bool
	// retCFA is the CFA of the frame whose return the temporary breakpoint
	// waits for: back in its caller, the stack pointer is at least that.
	retCFA uint64
	// signalEntry is set when the resume that began the step delivers a
	// signal: a handler entered at the first stop is where the step ends.
	signalEntry bool
	// glueHops counts the stops of a step into in linker glue (see
	// TrampolineAdvisor); inGlue is set while it is in there.
	glueHops int
	inGlue   bool
	// inline is set when the advisor knows inlined calls: origin is the
	// frame (depth and line) a step over began in.
	inline InlineAdvisor
	origin inlinePosition
	// insn is set while a step into goes one instruction at a time (in an
	// inlined function, whose exit gdb notices where it happens); at is
	// the pc the thread is at.
	insn bool
	at   uint64
	// originCFA is startCFA as the step began (a step into keeps its
	// origin to present a stop at an inlined call's entry: intoInline).
	originCFA uint64
	// finish is set for a step out of an inlined frame (stepfinish.go).
	finish *finishState
}

type stepStop struct {
	reason *SuspendReason
	pc     uint64
}

// stepState is the Target's table of threads in the middle of a line step.
type stepState struct {
	mu      sync.Mutex
	active  map[*Context]*stepper
	started map[*Context]bool // the one Started event of the step was sent
	silent  map[*Context]bool // resuming after an eventpoint nobody saw
	// handled holds stop reasons eventpoint handlers asked to show.
	handled map[*SuspendReason]bool
}

func (t *Target) lineModesFor(c *Context) ResumeModes {
	if t.StepAdvisor() == nil || c.kind != KindThread {
		return 0
	}
	if t.backend.CanResume(c)&stepModesNeeded != stepModesNeeded {
		return 0
	}
	return lineModes
}

// interceptStop hands a stop of a stepping thread to its stepper; it reports
// whether the stop was taken (and so must not reach listeners).
func (t *Target) interceptStop(thread *Context, reason *SuspendReason, pc uint64) bool {
	t.steps.mu.Lock()
	s := t.steps.active[thread]
	t.steps.mu.Unlock()
	if s == nil {
		return false
	}
	thread.stopQuietly(reason, pc)
	s.stops <- stepStop{reason, pc}
	return true
}

// interceptStart reports whether a Started event belongs to a step in progress
// whose Started was already sent.
func (t *Target) interceptStart(thread *Context) bool {
	t.steps.mu.Lock()
	defer t.steps.mu.Unlock()
	if t.steps.active[thread] == nil {
		return false
	}
	if t.steps.started[thread] {
		thread.setRunning()
		return true
	}
	t.steps.started[thread] = true
	return false
}

// startLineStep begins a line step or step-out of a stopped thread. It returns
// once the first backend resume is under way; the step then continues on a
// goroutine of its own and ends with one Stopped event.
func (t *Target) startLineStep(thread *Context, mode ResumeMode) error {
	adv := t.StepAdvisor()
	if adv == nil {
		return Errorf(CodeUnsupported, "resume", thread.id, fmt.Errorf("%s needs line information", mode))
	}
	_, _, pc := thread.State()
	s := &stepper{thread: thread, mode: mode, advisor: adv, stops: make(chan stepStop, 1)}
	s.signalEntry = thread.Pending()&^thread.DontPass() != 0
	var err error
	if s.startCFA, err = adv.FrameCFA(thread); err != nil {
		return Errorf(CodeOther, "resume", thread.id, fmt.Errorf("%s: %w", mode, err))
	}
	first := ResumeMode(-1)
	var opts ResumeOptions
	var tmp *Breakpoint
	var pos inlinePosition
	ia, inlineAware := adv.(InlineAdvisor)
	if inlineAware {
		pos, inlineAware = inlineAt(ia, thread, pc)
	}
	if inlineAware {
		hidden := s.hiddenAt(pos)
		pos.depth = pos.deepest() - hidden
		if mode == ResumeStepIntoLine && hidden > 0 {
			// gdb: a step at the entry of hidden inlined calls enters
			// the next one where it stands.
			t.stepIntoHidden(thread, hidden, pc)
			return nil
		}
		if mode == ResumeStepIntoLine {
			s.origin, s.originCFA = pos, s.startCFA
		}
		pos.depth = max(pos.depth, 0)
	}
	switch {
	case mode == ResumeStepOut && inlineAware && pos.depth > 0 && s.startFinishInline(ia, pos, pc):
		// Out of an inlined call, as gdb's finish does in an inlined frame.
		first, opts = s.rangeMode(), s.rangeOptions()
	case mode == ResumeStepOut && inlineAware && pos.depth > 0:
		// Out of an inlined call: step until its code is left.
		r, ok := adv.LineRange(thread, pc)
		if !ok {
			r = LineRange{Start: pc, End: pc + 1}
		}
		s.line, s.inline, s.origin = r, ia, pos
		first, opts = s.rangeMode(), s.rangeOptions()
	case mode == ResumeStepOut:
		ra, cfa, err := adv.Caller(thread)
		if err != nil {
			return Errorf(CodeOther, "resume", thread.id, fmt.Errorf("step out: %w", err))
		}
		s.retCFA = cfa
		if tmp, err = t.backendTempBreakpoint(thread, ra); err != nil {
			return err
		}
		first = ResumeContinue
	default:
		r, ok := adv.LineRange(thread, pc)
		if !ok {
			// No line here: as gdb's "single stepping until exit from
			// function", run to the return and go on from there (the rest
			// of the caller's line); one instruction where the return
			// address is unknown.
			if ra, cfa, err := adv.Caller(thread); err == nil {
				if tmp, err = t.backendTempBreakpoint(thread, ra); err == nil {
					s.retCFA = cfa
					first = ResumeContinue
					break
				}
			}
			r = LineRange{Start: pc, End: pc + 1}
		}
		s.line = r
		if inlineAware && mode != ResumeStepOut {
			s.inline, s.origin = ia, pos
			s.insn, s.at = mode == ResumeStepIntoLine && pos.depth > 0, pc
		}
		first, opts = s.rangeMode(), s.rangeOptions()
	}
	t.steps.mu.Lock()
	if t.steps.active == nil {
		t.steps.active = map[*Context]*stepper{}
		t.steps.started = map[*Context]bool{}
	}
	t.steps.active[thread] = s
	t.steps.started[thread] = false
	t.steps.mu.Unlock()
	if err := t.backend.Resume(thread, first, opts); err != nil {
		t.endStep(thread)
		if tmp != nil {
			t.backend.RemoveBreakpoint(tmp)
		}
		return err
	}
	go s.run(t, tmp)
	return nil
}

func (s *stepper) rangeOptions() ResumeOptions {
	if s.insn {
		return ResumeOptions{RangeStart: s.at, RangeEnd: s.at + 1, Count: 1}
	}
	return ResumeOptions{RangeStart: s.line.Start, RangeEnd: s.line.End, Count: 1}
}

func (s *stepper) rangeMode() ResumeMode {
	if s.mode == ResumeStepIntoLine {
		return ResumeStepIntoRange
	}
	return ResumeStepOverRange
}

func (t *Target) backendTempBreakpoint(thread *Context, addr uint64) (*Breakpoint, error) {
	t.mu.Lock()
	t.nextBP++
	bp := &Breakpoint{ID: t.nextBP, Spec: BreakpointSpec{Addr: addr, Internal: true}, Process: thread.Process()}
	t.mu.Unlock()
	if err := t.backend.InsertBreakpoint(bp); err != nil {
		return nil, err
	}
	return bp, nil
}

func (t *Target) endStep(thread *Context) {
	t.steps.mu.Lock()
	delete(t.steps.active, thread)
	delete(t.steps.started, thread)
	t.steps.mu.Unlock()
}

// run drives the step to its end. tmp is the internal breakpoint of a step-out
// (or of a step-over that returned through a function without line info).
func (s *stepper) run(t *Target, tmp *Breakpoint) {
	finish := func(st stepStop) {
		if tmp != nil {
			t.backend.RemoveBreakpoint(tmp)
		}
		t.endStep(s.thread)
		if st.reason.Kind == ReasonStep {
			s.intoInline(st.pc)
		}
		t.Stopped(s.thread, st.reason, st.pc)
	}
	for round := 0; ; round++ {
		st, ok := <-s.stops
		if !ok {
			return
		}
		if s.thread.Exited() {
			t.endStep(s.thread)
			return
		}
		next, opts, done := s.decide(t, st, &tmp, round)
		if done {
			finish(st)
			return
		}
		if err := t.backend.Resume(s.thread, next, opts); err != nil {
			finish(stepStop{&SuspendReason{Kind: ReasonError, Message: err.Error()}, st.pc})
			return
		}
	}
}

// decide looks at one intermediate stop and says how to go on, or that the step
// is done (the stop is then reported as it is, or as a Step).
func (s *stepper) decide(t *Target, st stepStop, tmp **Breakpoint, round int) (ResumeMode, ResumeOptions, bool) {
	if userStop(st.reason) || round >= maxStepRounds {
		return 0, ResumeOptions{}, true
	}
	if eventpointStop(st.reason) {
		if show := runEventpoints(s.thread, st.reason); show != nil {
			*st.reason = *show
			t.markHandled(st.reason)
			return 0, ResumeOptions{}, true
		}
		if *tmp == nil || st.pc != (*tmp).Spec.Addr {
			// An eventpoint on the way: go on as before.
			if *tmp != nil {
				return ResumeContinue, ResumeOptions{}, false
			}
			return s.rangeMode(), s.rangeOptions(), false
		}
	}
	asStep := func() { st.reason.Kind, st.reason.Breakpoints = ReasonStep, nil }
	regs, err := t.backend.Registers(s.thread)
	if err != nil {
		return 0, ResumeOptions{}, true
	}
	sp := regs.SP()

	// Returned through the temporary breakpoint of a step-out (or of a call
	// without line info being stepped through)?
	if *tmp != nil && st.pc == (*tmp).Spec.Addr {
		if sp < s.retCFA {
			// A deeper (recursive) activation returned here; keep going.
			return ResumeContinue, ResumeOptions{}, false
		}
		t.backend.RemoveBreakpoint(*tmp)
		*tmp = nil
		if s.mode == ResumeStepOut && s.finish == nil {
			asStep()
			return 0, ResumeOptions{}, true
		}
		// Back in the stepping frame after a function without lines: go on
		// stepping the original line.
		if s.line.Contains(st.pc) {
			return s.rangeMode(), s.rangeOptions(), false
		}
	}

	cfa, err := s.advisor.FrameCFA(s.thread)
	if err != nil {
		asStep()
		return 0, ResumeOptions{}, true
	}
	s.at = st.pc
	if s.finish != nil {
		return s.decideFinish(t, st.pc, cfa, tmp, asStep)
	}
	if cfa != s.startCFA {
		s.insn = false
	}
	here, hasLine := s.advisor.LineRange(s.thread, st.pc)
	switch {
	case cfa < s.startCFA:
		// Entered a function (step into, a jump into a callee, or a signal's
		// handler).
		if round == 0 && s.signalEntry {
			if _, handler := s.signalFrames(); handler {
				// gdb: a step from a signal stop steps into the handler.
				asStep()
				return 0, ResumeOptions{}, true
			}
		}
		if s.mode == ResumeStepIntoLine {
			if next, opts, ok := s.throughGlue(t, st.pc, tmp, asStep); ok {
				return next, opts, false
			}
		}
		if hasLine && s.mode == ResumeStepIntoLine {
			if st.pc == here.Start && !s.enteredCallee {
				if end, ok := s.prologueEnd(st.pc, here); ok {
					// At the function's entry: run past the prologue so the stop
					// lands where the function's body begins, as gdb's `step`
					// does.
					s.enteredCallee = true
					s.startCFA = cfa
					s.line = LineRange{Start: st.pc, End: end, File: here.File, Line: here.Line}
					return ResumeStepOverRange, s.rangeOptions(), false
				}
			}
			asStep()
			return 0, ResumeOptions{}, true
		}
		// No line info (or step over): run to the return address.
		return s.runToReturn(t, tmp, asStep)
	case cfa > s.startCFA:
		if !hasLine && s.mode != ResumeStepOut {
			if trampoline, _ := s.signalFrames(); trampoline {
				// Returned from a signal handler into the kernel's
				// trampoline: go on to the code the signal interrupted.
				return s.runToReturn(t, tmp, asStep)
			}
		}
		// Returned to the caller. At the start of a line that is the stop;
		// in the middle of one (the rest of the line that made the call),
		// gdb finishes that line first, and so do we.
		if hasLine && st.pc != here.Start && s.mode != ResumeStepOut {
			s.startCFA, s.line, s.inline = cfa, here, nil
			return s.rangeMode(), s.rangeOptions(), false
		}
		asStep()
		return 0, ResumeOptions{}, true
	}
	// Same frame.
	if !hasLine || s.enteredCallee {
		// (Past the prologue of the function a step into entered.)
		asStep()
		return 0, ResumeOptions{}, true
	}
	if s.inline != nil {
		if s.leftInline(st.pc) {
			return s.decideFinish(t, st.pc, cfa, tmp, asStep)
		}
		if next, opts, done, ok := s.decideInline(st, here, asStep); ok {
			return next, opts, done
		}
	}
	if s.line.Contains(st.pc) || here.SameLine(s.line) {
		// Still the same source line (a loop back, or another block of it):
		// keep stepping, as gdb does until the line changes.
		s.line = here
		return s.rangeMode(), s.rangeOptions(), false
	}
	if st.pc == here.Start {
		asStep()
		return 0, ResumeOptions{}, true
	}
	// In the middle of another line (a jump landed there): finish that line.
	s.line = here
	return s.rangeMode(), s.rangeOptions(), false
}

// userStop reports whether a stop during a step ends it as it is: anything
// but a step's own stop or an internal breakpoint.
func userStop(reason *SuspendReason) bool {
	switch reason.Kind {
	case ReasonStep:
		return false
	case ReasonBreakpoint:
		for _, bp := range reason.Breakpoints {
			if !bp.Spec.Internal {
				return true
			}
		}
		return false
	}
	return true
}

// runToReturn lets the thread run until its innermost frame returns (a
// temporary breakpoint at the return address, see retCFA); the step ends
// here when the return address is unknown.
func (s *stepper) runToReturn(t *Target, tmp **Breakpoint, asStep func()) (ResumeMode, ResumeOptions, bool) {
	ra, cfa, err := s.advisor.Caller(s.thread)
	if err == nil {
		if bp, err := t.backendTempBreakpoint(s.thread, ra); err == nil {
			*tmp, s.retCFA = bp, cfa
			return ResumeContinue, ResumeOptions{}, false
		}
	}
	asStep()
	return 0, ResumeOptions{}, true
}

// abandonStep ends the step of a thread that exited.
func (t *Target) abandonStep(thread *Context) {
	t.steps.mu.Lock()
	s := t.steps.active[thread]
	delete(t.steps.active, thread)
	delete(t.steps.started, thread)
	t.steps.mu.Unlock()
	if s != nil {
		close(s.stops)
	}
}
