package services

import (
	"syscall"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// runControl is the RunControl service's commands; its events are sent by
// runControlEvent, its state is the target's.
type runControl struct {
	a *Agent
}

// RegisterRunControl adds the RunControl service: contexts, state, resume in
// every mode the target supports, suspend, terminate, detach.
func (a *Agent) RegisterRunControl() {
	rc := &runControl{a: a}
	svc := a.srv.Service("RunControl")
	queryByID(svc, "getContext", func(id string) (any, error) {
		ctx, err := a.lookup(id)
		if err != nil {
			return nil, err
		}
		return a.runControlContext(ctx), nil
	})
	queryByID(svc, "getChildren", func(id string) (any, error) { return a.children(id) })
	svc.Command("getState", rc.getState)
	svc.Command("getMinState", rc.getMinState)
	svc.Command("resume", rc.resume)
	svc.Command("suspend", rc.suspend)
	svc.Command("terminate", rc.terminate)
	svc.Command("detach", rc.detach)
	svc.Command("getISA", rc.getISA)
}

func (rc *runControl) getState(c *tcf.Call) {
	a := rc.a
	args := c.Args()
	id := args.String()
	fail := func(err error) { c.Reply().Error(err).Bool(false).Uint64(0).Null().Null().Send() }
	if err := args.End(); err != nil {
		fail(err)
		return
	}
	ctx, err := a.thread(id)
	if err != nil {
		fail(err)
		return
	}
	state, reason, pc := ctx.State()
	if state == target.StateRunning {
		c.Reply().Error(nil).Bool(false).Uint64(0).Null().Data(runningParams(state)).Send()
		return
	}
	r, params := a.stateOf(reason)
	if state == target.StateExiting {
		params["StateName"] = "Zombie"
	}
	c.Reply().Error(nil).Bool(state == target.StateStopped).Uint64(pc).String(r).Data(params).Send()
}

func (rc *runControl) getMinState(c *tcf.Call) {
	a := rc.a
	args := c.Args()
	id := args.String()
	fail := func(err error) { c.Reply().Error(err).Bool(false).Null().Null().Send() }
	if err := args.End(); err != nil {
		fail(err)
		return
	}
	ctx, err := a.thread(id)
	if err != nil {
		fail(err)
		return
	}
	state, reason, _ := ctx.State()
	if state == target.StateRunning {
		c.Reply().Error(nil).Bool(false).Null().Data(runningParams(state)).Send()
		return
	}
	r, params := a.stateOf(reason)
	c.Reply().Error(nil).Bool(state == target.StateStopped).String(r).Data(params).Send()
}

func (rc *runControl) resume(c *tcf.Call) {
	a := rc.a
	args := c.Args()
	id := args.String()
	mode := args.Int()
	count := args.Int()
	var params tcf.Props
	if args.Remaining() > 0 {
		params = args.Props()
	}
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	ctx, err := a.lookup(id)
	if err != nil {
		c.ReplyError(err)
		return
	}
	a.own.resumed(c.Channel(), ctx, target.ResumeMode(mode))
	opts := target.ResumeOptions{Count: count}
	if v, ok := params.Uint64("RangeStart"); ok {
		opts.RangeStart = v
	}
	if v, ok := params.Uint64("RangeEnd"); ok {
		opts.RangeEnd = v
	}
	// The reply is not waited for: a client resuming from a stop wants the
	// next stop, and the reply rides with it (or follows within 1 ms).
	c.Defer()
	ctx.ResumeAsync(target.ResumeMode(mode), opts, func(err error) {
		if err != nil {
			c.ReplyError(err)
			return
		}
		c.Reply().Error(nil).SendBehind()
	})
}

func (rc *runControl) suspend(c *tcf.Call) {
	a := rc.a
	ctx, err := a.contextArg(c)
	if err == nil {
		a.own.hold(c.Channel(), ctx)
		if err = ctx.Suspend(); err == nil {
			a.own.requested(c.Channel(), ctx)
		}
	}
	c.ReplyError(err)
}

func (rc *runControl) terminate(c *tcf.Call) {
	a := rc.a
	ctx, err := a.contextArg(c)
	if err == nil {
		err = ctx.Terminate()
	}
	c.ReplyError(err)
}

func (rc *runControl) detach(c *tcf.Call) {
	a := rc.a
	ctx, err := a.contextArg(c)
	if err == nil {
		err = ctx.Detach()
	}
	c.ReplyError(err)
}

func (rc *runControl) getISA(c *tcf.Call) {
	a := rc.a
	args := c.Args()
	id := args.String()
	addr := args.Uint64()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	if _, err := a.lookup(id); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).Data(isaProps{Addr: addr, Alignment: 1, MaxInstrSize: 15, DefISA: isaX8664, ISA: isaX8664}).Send()
}

// isaProps is getISA's answer, in the order the replies have always had
// them (the keys' order).
type isaProps struct {
	Addr         uint64 `json:"Addr"`
	Alignment    int    `json:"Alignment"`
	DefISA       string `json:"DefISA"`
	ISA          string `json:"ISA"`
	MaxInstrSize int    `json:"MaxInstrSize"`
	Size         uint64 `json:"Size"`
}

// contextArg decodes a single context-ID argument and looks it up.
func (a *Agent) contextArg(c *tcf.Call) (*target.Context, error) {
	args := c.Args()
	id := args.String()
	if err := args.End(); err != nil {
		return nil, err
	}
	return a.lookup(id)
}

// thread looks up a context that has a run state.
func (a *Agent) thread(id string) (*target.Context, error) {
	ctx, err := a.lookup(id)
	if err != nil {
		return nil, err
	}
	if ctx.IsProcess() {
		return nil, target.Errorf(target.CodeInvalidContext, "get state", ctx.ID(), errNoState)
	}
	return ctx, nil
}

var errNoState = tcf.Errorf(tcf.CodeInvalidContext, "a process has no run state; ask one of its threads")

// children lists the RunControl children of id ("" for the roots).
func (a *Agent) children(id string) ([]string, error) {
	out := []string{}
	if id == "" {
		for _, p := range a.target.Processes() {
			out = append(out, string(p.ID()))
		}
		return out, nil
	}
	ctx, err := a.lookup(id)
	if err != nil {
		return nil, err
	}
	if ctx.IsProcess() {
		for _, t := range ctx.Children() {
			out = append(out, string(t.ID()))
		}
	}
	return out, nil
}

// runControlContext is a context's RunControl properties, as the C agent
// reports them on Linux.
func (a *Agent) runControlContext(c *target.Context) *runControlProps {
	id := string(c.ID())
	proc := string(c.Process().ID())
	p := &runControlProps{
		ID:           id,
		ProcessID:    proc,
		BPGroup:      proc,
		SymbolsGroup: proc,
		CanSuspend:   true,
		CanTerminate: true,
		WordSize:     8,
		CPUGroup:     "CPU",
	}
	if cr := c.Creator(); cr != nil {
		p.CreatorID = string(cr.ID())
	}
	if c.IsProcess() {
		p.Name = c.Name()
		p.IsContainer = true
		p.CanResume = uint64(target.ResumeModes(0).With(target.ResumeContinue))
		p.CanDetach = true
		p.RCGroup = proc
		return p
	}
	name := c.Name()
	if name == "" {
		name = itoa(c.TID())
	}
	modes := uint64(c.CanResume())
	count := modes &^ (1 << uint(target.ResumeContinue))
	p.ParentID = proc
	p.Name = name
	p.HasState = true
	p.CanResume = modes
	p.CanCount = &count
	p.RegAccessTypes = []string{"rd-stop", "wr-stop"}
	p.RCGroup = id
	p.AdditionalInfo = "tid " + itoa(c.TID())
	return p
}

// runControlProps are a context's RunControl properties, in the order the
// replies have always had them (the keys' order). The fields with
// omitempty are a thread's or a process's only.
type runControlProps struct {
	AdditionalInfo string   `json:"AdditionalInfo,omitempty"`
	BPGroup        string   `json:"BPGroup"`
	CPUGroup       string   `json:"CPUGroup"`
	CanCount       *uint64  `json:"CanCount,omitempty"`
	CanDetach      bool     `json:"CanDetach,omitempty"`
	CanResume      uint64   `json:"CanResume"`
	CanSuspend     bool     `json:"CanSuspend"`
	CanTerminate   bool     `json:"CanTerminate"`
	CreatorID      string   `json:"CreatorID,omitempty"`
	HasState       bool     `json:"HasState"`
	ID             string   `json:"ID"`
	IsContainer    bool     `json:"IsContainer"`
	Name           string   `json:"Name"`
	ParentID       string   `json:"ParentID,omitempty"`
	ProcessID      string   `json:"ProcessID"`
	RCGroup        string   `json:"RCGroup"`
	RegAccessTypes []string `json:"RegAccessTypes,omitempty"`
	SymbolsGroup   string   `json:"SymbolsGroup"`
	WordSize       int      `json:"WordSize"`
}

// stateOf gives the TCF reason string and state parameters of a stop.
func (a *Agent) stateOf(r *target.SuspendReason) (string, map[string]any) {
	params := map[string]any{}
	if r == nil {
		return "Suspended", params
	}
	if r.Signal != 0 {
		params["Signal"] = int(r.Signal)
		params["SignalName"] = r.Signal.Name()
		params["SignalDescription"] = r.Signal.Description()
	}
	var bps []string
	for _, bp := range r.Breakpoints {
		if id := a.bps.clientID(bp); id != "" {
			bps = append(bps, id)
		}
	}
	if len(bps) > 0 {
		params["BPs"] = bps
	}
	switch r.Kind {
	case target.ReasonException:
		if r.Signal != 0 {
			// A fault the kernel raised: named as the C agent names any
			// intercepted signal (its description goes in contextException).
			return "Signal " + itoa(int(r.Signal)), params
		}
		fallthrough
	case target.ReasonError:
		if r.Message != "" {
			params["StepError"] = map[string]any{"Code": 1, "Format": r.Message}
		}
	case target.ReasonEvent:
		return "Event: " + r.Event, params
	case target.ReasonSignal:
		// The C agent's reason for an intercepted signal names it.
		return "Signal " + itoa(int(r.Signal)), params
	}
	return r.Kind.TCFName(), params
}

func runningParams(s target.RunState) map[string]any {
	if s == target.StateExiting {
		return map[string]any{"StateName": "Zombie"}
	}
	return map[string]any{}
}

// isFault reports whether a signal means the program faulted (reported with a
// contextException as well, as the C agent does).
func isFault(s target.Signal) bool {
	switch syscall.Signal(s) {
	case syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGILL, syscall.SIGFPE, syscall.SIGABRT:
		return true
	}
	return false
}

// runControlEvent sends RunControl's events of a target event.
func (a *Agent) runControlEvent(e target.Event) {
	c := e.Context
	id := string(c.ID())
	switch e.Kind {
	case target.EventCreated:
		a.emit("RunControl", "contextAdded", []any{a.runControlContext(c)})
	case target.EventChanged:
		if state, _, _ := c.State(); !c.IsProcess() && (state == target.StateExiting || state == target.StateExited) {
			// A thread began to exit: its state (name "Zombie") changed, not
			// its properties, as the C agent reports PTRACE_EVENT_EXIT.
			a.emit("RunControl", "contextStateChanged", id)
			return
		}
		a.emit("RunControl", "contextChanged", []any{a.runControlContext(c)})
	case target.EventStopped:
		if a.hidden(c) {
			return
		}
		a.emitSuspended(e, a.isEntryStop(c), true)
	case target.EventStarted:
		if a.hidden(c) {
			return
		}
		a.emit("RunControl", "contextResumed", id)
	case target.EventExited:
		if c.IsProcess() {
			// The main thread goes with its process.
			a.emit("RunControl", "contextRemoved", []string{string(target.ThreadID(c.PID(), c.PID()))})
			a.emit("RunControl", "contextRemoved", []string{id})
		} else if c.TID() != c.PID() {
			a.emit("RunControl", "contextRemoved", []string{id})
		}
	}
}
