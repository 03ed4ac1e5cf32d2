package dap

import (
	"errors"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/target"
)

// Run control. sonde's threads stop independently (a breakpoint stops the
// thread that hit it: non-stop, allThreadsStopped false); continue resumes
// every stopped thread of the process, a step moves only the thread named,
// pause stops them all.

// runnable returns the live debuggee, refusing cores.
func (s *Server) runnable() (*debuggee, error) {
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	if d.core {
		return nil, errReadOnly
	}
	if d.proc.Exited() {
		return nil, errorf("the program has exited")
	}
	return d, nil
}

func (s *Server) continue_(r *request) (any, error) {
	var a godap.ContinueArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.runnable()
	if err != nil {
		return nil, err
	}
	d.endPause()
	s.holdEvents()
	if err := d.proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil && target.CodeOf(err) != target.CodeAlreadyRunning {
		return s.afterResume(nil, err)
	}
	return s.afterResume(godap.ContinueResponseBody{AllThreadsContinued: true}, nil)
}

type stepArgs struct {
	ThreadId     int    `json:"threadId"`
	SingleThread bool   `json:"singleThread"`
	Granularity  string `json:"granularity"`
	TargetId     int    `json:"targetId"`
}

// step resumes one thread in a line mode, or its instruction equivalent.
func (s *Server) step(r *request, line, insn target.ResumeMode) (any, error) {
	var a stepArgs
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.runnable()
	if err != nil {
		return nil, err
	}
	th, err := d.thread(a.ThreadId)
	if err != nil {
		return nil, err
	}
	if line == target.ResumeStepOut && d.outermost(th) {
		return nil, errOutermost
	}
	d.endPause()
	s.holdEvents()
	if a.TargetId != 0 && line == target.ResumeStepIntoLine {
		return s.afterResume(nil, d.stepInto(th, a.TargetId))
	}
	mode := line
	if a.Granularity == "instruction" {
		mode = insn
	}
	return s.afterResume(nil, th.Resume(mode, target.ResumeOptions{}))
}

func (s *Server) next(r *request) (any, error) {
	return s.step(r, target.ResumeStepOverLine, target.ResumeStepOver)
}

func (s *Server) stepIn(r *request) (any, error) {
	return s.step(r, target.ResumeStepIntoLine, target.ResumeStepInto)
}

// errOutermost refuses a step out of a frame no function called: the
// program's entry point, a thread's clone frame (gdb's words; lldb-dap
// answers "Could not create return address breakpoint."). The thread stays
// where it is.
//
//lint:ignore ST1005 gdb's message, word for word (its period too)
var errOutermost = errors.New(`"finish" not meaningful in the outermost frame.`)

// outermost reports whether th's top frame has no caller on its stack.
// main is not outermost: its callers in libc are frames of the stack, as
// lldb shows them, and a step out of main stops in __libc_start_call_main
// as lldb's does (gdb, whose backtrace ends at main, refuses there).
func (d *debuggee) outermost(th *target.Context) bool {
	tr, _, err := d.trace(th)
	return err == nil && len(tr.Frames) == 1
}

func (s *Server) stepOut(r *request) (any, error) {
	return s.step(r, target.ResumeStepOut, target.ResumeStepOut)
}

// pause stops every thread; the thread named gets the stopped event (with
// allThreadsStopped), the others' stops are not announced one by one.
func (s *Server) pause(r *request) (any, error) {
	var a godap.PauseArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.runnable()
	if err != nil {
		return nil, err
	}
	th, err := d.thread(a.ThreadId)
	if err != nil {
		threads := d.proc.Children()
		if len(threads) == 0 {
			return nil, err
		}
		th = threads[0]
	}
	if st, _, _ := th.State(); st != target.StateRunning {
		// Already stopped: stop the rest and say so.
		d.pauseMu.Lock()
		d.pausing = map[*target.Context]bool{}
		d.pauseMu.Unlock()
		d.proc.Suspend()
		return withAfter{then: func() {
			s.sendEvent("stopped", godap.StoppedEventBody{Reason: "pause", ThreadId: th.TID(), AllThreadsStopped: true})
		}}, nil
	}
	d.pauseMu.Lock()
	d.pausing = map[*target.Context]bool{}
	d.pauseFor = th
	d.pauseMu.Unlock()
	if err := d.proc.Suspend(); err != nil && target.CodeOf(err) != target.CodeAlreadyStopped {
		return nil, err
	}
	return nil, nil
}

// endPause ends the hiding of a pause's other stops (the program runs on).
func (d *debuggee) endPause() {
	d.pauseMu.Lock()
	d.pausing, d.pauseFor = nil, nil
	d.pauseMu.Unlock()
}
