package services

import (
	"sync"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// What a channel owns, and what happens to it when the channel goes.
//
// Every channel shares the one live target, but a client that disconnects
// (closes its channel, crashes, loses its network) must not leave a program
// stopped or traced because of it. A channel owns:
//
//   - the processes it holds: those it attached (Processes.attach), launched
//     debugged (Processes.start with Attach) or ran RunControl suspend or
//     resume in. A followed fork child is held by the holders of its
//     parent. When the last channel holding a process closes, the process
//     is detached: every patch removed, every thread released, a
//     job-control stop from before the attach kept — unless the agent runs
//     with --keep-attached.
//   - the stops it requested: the attach stop of each thread of a process
//     it attached, the stop of each thread its RunControl.suspend stopped,
//     and the end of a step it resumed a thread in (until another channel
//     resumes the thread). When the channel closes, a thread still in that
//     very stop (not resumed and stopped again since) is resumed, unless
//     another open channel requested the same stop. (A step still under way
//     when its channel closes ends stopped, and stays so until another
//     client resumes it or the last one leaves.)
//   - the breakpoints it planted (breakpoints.go): a breakpoint goes with the
//     last channel that holds its ID, and threads stopped only at
//     breakpoints that went are resumed.
//
// When the last channel closes every process is detached (again, unless
// --keep-attached), whoever held it: stops nobody owns (a signal, the end of
// a step, StopAtMain of a launch) do not outlive the last client.
//
// With --keep-attached, processes stay attached after their holders close
// (a client may come back to them); what a closed channel owned is still
// released: its breakpoints go and the stops it requested are resumed. Stops
// no channel owns stay for the next client to see.
//
// A program Processes.start launched is detached like an attached one and
// runs on, as the C agent leaves the programs it started (its Terminals
// service is different: the C agent kills a terminal's program with the
// channel that launched it). Stopping the agent (SIGINT, SIGTERM) detaches
// everything too; SIGKILL of the agent leaves the kernel to release the
// threads (see the README).

// ownership is what each channel owns of the target.
//
// The ownership table keeps those books; the agent acts on what it says
// when a channel closes (channelGone).
type ownership struct {
	mu sync.Mutex
	// open counts the channels open now.
	open int
	// keepAttached keeps processes attached when their holders close.
	keepAttached bool
	// holders are the channels holding each process.
	holders map[*target.Context]map[*tcf.Channel]bool
	// stops are the stops channels requested, per thread: the reason of the
	// stop (a new one for every stop, so a thread resumed and stopped again
	// is no longer in a requested stop) and who requested it.
	stops map[*target.Context]requestedStop
	// steps are the threads whose latest resume was a step, and the
	// channel that asked for it.
	steps map[*target.Context]*tcf.Channel
}

type requestedStop struct {
	reason *target.SuspendReason
	by     map[*tcf.Channel]bool
}

// SetKeepAttached keeps processes attached (though no longer stopped by a
// closed channel's requests) when the channels holding them close, and when
// the last channel closes (the agent's --keep-attached).
func (a *Agent) SetKeepAttached(keep bool) {
	a.own.mu.Lock()
	a.own.keepAttached = keep
	a.own.mu.Unlock()
}

// trackChannels counts channels and releases what each owns when it closes.
// Start calls it; the close hook is registered first, so it runs before any
// other hook of the channel.
func (a *Agent) trackChannels() {
	a.srv.OnChannelOpen(func(ch *tcf.Channel) {
		a.own.opened()
		ch.OnClose(func() { a.channelGone(ch) })
	})
	// A followed fork child is held by whoever holds its parent.
	a.target.OnFork(func(child *target.Context) {
		if cr := child.Creator(); cr != nil {
			a.own.inherit(cr.Process(), child)
		}
	})
}

// opened counts a channel that opened.
func (o *ownership) opened() {
	o.mu.Lock()
	o.open++
	o.mu.Unlock()
}

// inherit makes child held by whoever holds proc.
func (o *ownership) inherit(proc, child *target.Context) {
	o.mu.Lock()
	for ch := range o.holders[proc] {
		o.holdLocked(ch, child)
	}
	o.mu.Unlock()
}

// hold records that ch holds ctx's process.
func (o *ownership) hold(ch *tcf.Channel, ctx *target.Context) {
	if ch == nil || ctx == nil {
		return
	}
	o.mu.Lock()
	o.holdLocked(ch, ctx.Process())
	o.mu.Unlock()
}

func (o *ownership) holdLocked(ch *tcf.Channel, proc *target.Context) {
	if o.holders == nil {
		o.holders = map[*target.Context]map[*tcf.Channel]bool{}
	}
	if o.holders[proc] == nil {
		o.holders[proc] = map[*tcf.Channel]bool{}
	}
	o.holders[proc][ch] = true
}

// requested records that ch asked for the stops ctx is in now: ctx's own if
// it is a thread, its threads' if it is a process. Only stops a request
// causes (target.ReasonUser) are recorded: a thread a suspend found at a
// breakpoint stays the breakpoint's.
func (o *ownership) requested(ch *tcf.Channel, ctx *target.Context) {
	if ch == nil || ctx == nil {
		return
	}
	threads := []*target.Context{ctx}
	if ctx.IsProcess() {
		threads = ctx.Children()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.holdLocked(ch, ctx.Process())
	if o.stops == nil {
		o.stops = map[*target.Context]requestedStop{}
	}
	for _, th := range threads {
		state, reason, _ := th.State()
		if state != target.StateStopped || reason == nil || reason.Kind != target.ReasonUser {
			continue
		}
		rs := o.stops[th]
		if rs.reason != reason {
			rs = requestedStop{reason: reason, by: map[*tcf.Channel]bool{}}
		}
		rs.by[ch] = true
		o.stops[th] = rs
	}
}

// resumed records a channel's resume of ctx: a step's end is its stop; any
// other resume ends an earlier channel's claim on a step's end.
func (o *ownership) resumed(ch *tcf.Channel, ctx *target.Context, mode target.ResumeMode) {
	if ch == nil || ctx == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.holdLocked(ch, ctx.Process())
	if ctx.IsProcess() {
		for _, th := range ctx.Children() {
			delete(o.steps, th)
		}
		return
	}
	if mode == target.ResumeContinue {
		delete(o.steps, ctx)
		return
	}
	if o.steps == nil {
		o.steps = map[*target.Context]*tcf.Channel{}
	}
	o.steps[ctx] = ch
}

// forget drops what is recorded about a context that exited.
func (o *ownership) forget(c *target.Context) {
	o.mu.Lock()
	delete(o.holders, c)
	delete(o.stops, c)
	delete(o.steps, c)
	o.mu.Unlock()
}

// channelGone releases what a closed channel owned (see the comment at the
// top of this file).
func (a *Agent) channelGone(ch *tcf.Channel) {
	// Breakpoints first: a process detached below has nothing to unplant.
	a.breaks.dropChannel(ch)
	detach, resume := a.own.release(ch, a.target.Processes)
	gone := map[*target.Context]bool{}
	for _, proc := range detach {
		if proc.Exited() {
			continue
		}
		gone[proc] = true
		a.log.Info("detaching: no client holds it any more", "process", proc.ID())
		if err := proc.Detach(); err != nil && !proc.Exited() {
			a.log.Warn("detaching a process its clients left", "process", proc.ID(), "err", err)
		}
	}
	for _, th := range resume {
		if gone[th.Process()] || th.Exited() {
			continue
		}
		if err := th.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil && !th.Exited() {
			a.log.Warn("resuming a thread its closed channel suspended", "thread", th.ID(), "err", err)
		}
	}
}

// release takes ch's holds and requests off the books (a channel closed):
// it returns the processes nobody holds any more, to detach (with the last
// channel, every process of all, unless processes are kept attached), and
// the threads stopped only for ch, to resume.
func (o *ownership) release(ch *tcf.Channel, all func() []*target.Context) (detach, resume []*target.Context) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.open--
	last := o.open <= 0
	keep := o.keepAttached
	for proc, hs := range o.holders {
		if !hs[ch] {
			continue
		}
		delete(hs, ch)
		if len(hs) == 0 {
			delete(o.holders, proc)
			if !keep {
				detach = append(detach, proc)
			}
		}
	}
	for th, rs := range o.stops {
		if !rs.by[ch] {
			continue
		}
		delete(rs.by, ch)
		if len(rs.by) > 0 {
			continue
		}
		delete(o.stops, th)
		if state, reason, _ := th.State(); state == target.StateStopped && reason == rs.reason {
			resume = append(resume, th)
		}
	}
	for th, by := range o.steps {
		if by != ch {
			continue
		}
		delete(o.steps, th)
		if state, reason, _ := th.State(); state == target.StateStopped && reason != nil && reason.Kind == target.ReasonStep {
			resume = append(resume, th)
		}
	}
	if last && !keep {
		detach = all()
		o.holders, o.stops, o.steps = nil, nil, nil
	}
	return detach, resume
}
