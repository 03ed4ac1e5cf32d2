package target

// Eventpoints: stops at internal breakpoints that carry an OnHit handler are
// handled here, for every backend alike. The handler decides whether the stop is
// shown; if not, the thread resumes and listeners see neither the stop nor the
// start.

// eventpointStop reports whether reason is a hit of internal breakpoints only,
// at least one with a handler.
func eventpointStop(reason *SuspendReason) bool {
	if reason == nil || reason.Kind != ReasonBreakpoint || len(reason.Breakpoints) == 0 {
		return false
	}
	handler := false
	for _, bp := range reason.Breakpoints {
		if !bp.Spec.Internal {
			return false
		}
		handler = handler || bp.Spec.OnHit != nil
	}
	return handler
}

// runEventpoints calls the handlers of the internal breakpoints in reason and
// returns the first reason one of them asks to report, or nil.
func runEventpoints(thread *Context, reason *SuspendReason) *SuspendReason {
	var show *SuspendReason
	for _, bp := range reason.Breakpoints {
		if bp.Spec.OnHit == nil {
			continue
		}
		if r := bp.Spec.OnHit(thread, bp); r != nil && show == nil {
			show = r
		}
	}
	return show
}

// interceptEventpoint takes a stop at eventpoints off the reporting path: the
// handlers run on a goroutine (the reporting goroutine may be a backend's tracer
// thread, which handlers' memory reads need free), then the thread either
// resumes silently or its stop is reported with the handler's reason.
func (t *Target) interceptEventpoint(thread *Context, reason *SuspendReason, pc uint64) bool {
	if !eventpointStop(reason) {
		return false
	}
	t.steps.mu.Lock()
	if t.steps.handled[reason] {
		// A handler already decided to show this stop: report it as it is
		// (running the handlers again would count the hit twice and loop).
		delete(t.steps.handled, reason)
		t.steps.mu.Unlock()
		return false
	}
	if t.steps.silent == nil {
		t.steps.silent = map[*Context]bool{}
	}
	t.steps.silent[thread] = true
	t.steps.mu.Unlock()
	thread.stopQuietly(reason, pc)
	go func() {
		show := runEventpoints(thread, reason)
		if show == nil {
			if err := t.backend.Resume(thread, ResumeContinue, ResumeOptions{Count: 1}); err == nil {
				t.steps.mu.Lock()
				delete(t.steps.silent, thread)
				t.steps.mu.Unlock()
				return
			}
			show = &SuspendReason{Kind: ReasonError, Message: "could not resume after an internal breakpoint"}
		}
		t.steps.mu.Lock()
		delete(t.steps.silent, thread)
		t.steps.mu.Unlock()
		t.markHandled(show)
		t.Stopped(thread, show, pc)
	}()
	return true
}

// interceptSilentStart reports whether a Started event comes from resuming a
// thread after an eventpoint it did not stop at (listeners never saw the stop).
func (t *Target) interceptSilentStart(thread *Context) bool {
	t.steps.mu.Lock()
	defer t.steps.mu.Unlock()
	if t.steps.silent[thread] {
		thread.setRunning()
		return true
	}
	return false
}

// markHandled records that eventpoint handlers produced reason, so that Stopped
// reports it instead of running the handlers on it again.
func (t *Target) markHandled(reason *SuspendReason) {
	if !eventpointStop(reason) {
		return
	}
	t.steps.mu.Lock()
	if t.steps.handled == nil {
		t.steps.handled = map[*SuspendReason]bool{}
	}
	t.steps.handled[reason] = true
	t.steps.mu.Unlock()
}

// RunEventpoints lets a backend run eventpoint handlers right where it noticed
// the stop (its own event thread), instead of reporting the stop with Stopped
// and letting the Target run them on a goroutine and resume through the
// backend: that saves two thread hops per hit, which is what makes fast
// conditional breakpoints possible. ok is false when reason is not an
// eventpoint stop (report it with Stopped as usual). Otherwise the handlers have
// run with the thread marked stopped (no event sent); show is the reason to
// report with Stopped, or nil: the thread is marked running again, silently, and
// the backend must resume it as it was running before.
//
// The handlers may call any method of the Target, so a backend that calls this
// on its event thread must accept calls from that thread.
func (t *Target) RunEventpoints(thread *Context, reason *SuspendReason, pc uint64) (show *SuspendReason, ok bool) {
	if !eventpointStop(reason) {
		return nil, false
	}
	thread.stopQuietly(reason, pc)
	show = runEventpoints(thread, reason)
	t.markHandled(show)
	if show == nil {
		thread.setRunning()
	}
	return show, true
}
