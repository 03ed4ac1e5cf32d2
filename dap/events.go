package dap

import (
	"fmt"
	"time"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/target"
)

// listen turns the target's events into DAP events.
func (d *debuggee) listen() {
	d.tgt.AddListener(func(e target.Event) {
		defer d.s.recoverIn("event " + e.Kind.String())
		if p := d.eventProc.Load(); p != nil && e.Context.Process() != p {
			return
		}
		switch e.Kind {
		case target.EventCreated:
			if !e.Context.IsProcess() && d.configured.Load() {
				d.threadStarted(e.Context)
			}
		case target.EventStopped:
			d.onStop(e)
		case target.EventStarted:
			d.s.handles.threadRan(e.Context)
		case target.EventExited:
			if e.Context.IsProcess() {
				d.onExit(e)
			} else if d.configured.Load() {
				d.s.handles.threadRan(e.Context)
				d.s.sendEvent("thread", godap.ThreadEventBody{Reason: "exited", ThreadId: e.Context.TID()})
			}
		}
	})
}

// onStop reports a thread's stop with the reason DAP clients know.
func (d *debuggee) onStop(e target.Event) {
	th := e.Context
	if th.IsProcess() || !d.configured.Load() {
		return // the stop at the first instruction, before configurationDone
	}
	d.s.handles.threadRan(th)
	r := e.Reason
	body := godap.StoppedEventBody{ThreadId: th.TID()}
	if r == nil {
		r = &target.SuspendReason{Kind: target.ReasonUser}
	}
	switch r.Kind {
	case target.ReasonUser, target.ReasonContainer:
		// Only a pause shows such a stop, once: the stops of launch and
		// attach (which may be delivered after configurationDone) and those
		// of the other threads a pause stopped are not announced.
		d.pauseMu.Lock()
		asked := d.pauseFor == th
		if asked {
			d.pauseFor = nil
		}
		d.pauseMu.Unlock()
		if !asked {
			return
		}
		body.Reason = "pause"
		body.AllThreadsStopped = asked
	case target.ReasonStep:
		body.Reason = "step"
		d.stepEndLogpoints(th)
	case target.ReasonBreakpoint, target.ReasonWatchpoint:
		body.Reason, body.HitBreakpointIds = d.s.bps.stopReason(r)
		if len(body.HitBreakpointIds) == 0 && isStepInto(r) {
			body.Reason = "step"
		}
		if r.Message != "" {
			body.Description = r.Message
			body.Text = r.Message
		}
		if body.Reason == "exception" && body.Description == "" {
			// What VS Code shows beside "Paused on exception".
			body.Description = d.s.exceptionStopText(th, r)
			body.Text = body.Description
		}
	case target.ReasonSignal, target.ReasonException, target.ReasonError:
		body.Reason = "exception"
		body.Description = r.Message
		if r.Signal != 0 {
			if body.Description == "" {
				body.Description = r.Signal.Description()
			}
			body.Description = r.Signal.Name() + ": " + body.Description
		}
		body.Text = body.Description
	case target.ReasonSharedLibrary, target.ReasonEvent:
		// Not asked for: let the thread go on.
		th.Resume(target.ResumeContinue, target.ResumeOptions{})
		return
	default:
		body.Reason = "pause"
	}
	// What the client asks next (prefetch.go), started before the event is
	// written: the walk runs while the write wakes the client.
	runWarm(func() { d.prefetch(th) }) // on a grown stack (warmgo.go)
	// The client looks at the stop before it resumes: the backend need not
	// stay awake for a quick resume (its spin took a CPU from the client
	// and the prefetch).
	d.tgt.ClientsTurn()
	d.s.sendEvent("stopped", body)
}

// onExit reports the program's end: exited (with its code) and then
// terminated, once its output is all sent.
func (d *debuggee) onExit(e target.Event) {
	if d.exited.Swap(true) {
		return
	}
	if e.Exit != nil && e.Exit.Detached {
		d.s.sendEvent("terminated", nil)
		return
	}
	waitTimeout(&d.output, time.Second)
	code := 0
	if e.Exit != nil {
		code = e.Exit.Code
		if e.Exit.Signal != 0 {
			code = 128 + int(e.Exit.Signal)
			d.s.output("console", fmt.Sprintf("Process %d %s\n", d.proc.PID(), e.Exit))
		}
	}
	d.s.sendEvent("exited", godap.ExitedEventBody{ExitCode: code})
	d.s.sendEvent("terminated", nil)
}

type waiter interface{ Wait() }

func waitTimeout(w waiter, limit time.Duration) {
	done := make(chan struct{})
	go func() { w.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
	}
}

// threadStarted announces a thread once.
func (d *debuggee) threadStarted(th *target.Context) {
	d.pauseMu.Lock()
	if d.announced == nil {
		d.announced = map[*target.Context]bool{}
	}
	seen := d.announced[th]
	d.announced[th] = true
	d.pauseMu.Unlock()
	if !seen {
		d.s.sendEvent("thread", godap.ThreadEventBody{Reason: "started", ThreadId: th.TID()})
	}
}
