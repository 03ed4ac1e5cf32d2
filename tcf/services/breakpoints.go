package services

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// Breakpoints: client-chosen IDs shared by every channel, reference-counted
// per channel and dropped when the last channel that set them closes. Each is
// planted in every process of its scope, at every address its location
// resolves to (all inlined and cloned copies of a function or line), as an
// eventpoint whose handler applies the condition, the ignore count and
// Temporary before the stop is shown.

// Locator resolves breakpoint locations in a process; the session implements
// it.
type Locator interface {
	FunctionAddresses(proc *target.Context, name string) ([]uint64, error)
	LineAddresses(proc *target.Context, file string, line, column int) ([]uint64, error)
}

// prologueSkipper is the optional part of a Locator that moves a function's
// entry past its prologue (the SkipPrologue breakpoint property).
type prologueSkipper interface {
	AfterPrologue(proc *target.Context, entry uint64) uint64
}

// ConditionEvaluator evaluates a breakpoint condition in a stopped thread; the
// Expressions service provides it.
type ConditionEvaluator func(thread *target.Context, expr string) (bool, error)

type clientBreakpoint struct {
	id     string
	props  map[string]any
	owners map[*tcf.Channel]int
	hits   int64
	// spent is set when a Temporary breakpoint was reported: later hits
	// (other threads, before it is removed) are not.
	spent bool
	// planted instances per process.
	planted map[*target.Context][]*target.Breakpoint
	errors  map[*target.Context]string
}

type breakpointTable struct {
	mu        sync.Mutex
	byID      map[string]*clientBreakpoint
	byPlanted map[*target.Breakpoint]*clientBreakpoint
	locator   Locator
	condition ConditionEvaluator
}

// offered reports whether the Breakpoints service is offered (its tables
// are made when it is registered, before the agent starts).
func (bt *breakpointTable) offered() bool { return bt.byID != nil }

// clientID maps a planted breakpoint to the client's breakpoint ID, "" for
// sonde's own (stepping, library events).
func (bt *breakpointTable) clientID(bp *target.Breakpoint) string {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	if cb := bt.byPlanted[bp]; cb != nil {
		return cb.id
	}
	return ""
}

// mayHaveSpent reports whether a stop may be at a Temporary breakpoint that
// onEvent must remove (releaseSpent) before the thread runs into it again.
// It may run on the tracer thread, which must not wait for the table's
// lock: when the lock is busy, the answer is yes.
func (bt *breakpointTable) mayHaveSpent(r *target.SuspendReason) bool {
	if r == nil || len(r.Breakpoints) == 0 {
		return false
	}
	if !bt.mu.TryLock() {
		return true
	}
	defer bt.mu.Unlock()
	for _, bp := range r.Breakpoints {
		if cb := bt.byPlanted[bp]; cb != nil && cb.spent {
			return true
		}
	}
	return false
}

// SetLocator installs how function and file:line locations are resolved.
func (a *Agent) SetLocator(l Locator) {
	a.bps.mu.Lock()
	a.bps.locator = l
	a.bps.mu.Unlock()
}

// SetConditionEvaluator installs how breakpoint conditions are evaluated.
func (a *Agent) SetConditionEvaluator(f ConditionEvaluator) {
	a.bps.mu.Lock()
	a.bps.condition = f
	a.bps.mu.Unlock()
}

// breakpoints is the Breakpoints service: its commands, and the planting,
// resolving and hit handling of the client's breakpoints over the agent's
// breakpoint table (which run control and the target's listeners share).
// It holds what that needs, not the Agent: the target and the session, its
// probes, the events out, the DPrintf streams dynamic printfs write to,
// and the PathMap service's translation of client paths.
type breakpoints struct {
	bt       *breakpointTable
	target   *target.Target
	session  *session.Session
	log      *slog.Logger
	events   *eventOut
	dprintfs *dprintfState
	probes   *probeState
	// paths translates a client's source paths: the PathMap service, nil
	// until it is registered (or when it is not offered).
	paths *pathMap
}

// newBreakpoints makes the Breakpoints service's state for a (its commands
// are bound only when the service is registered).
func newBreakpoints(a *Agent) *breakpoints {
	return &breakpoints{bt: &a.bps, target: a.target, session: a.session, log: a.log,
		events: a.events, dprintfs: a.dprintfs, probes: newProbeState()}
}

// query returns the IDs of the contexts that match q (none when q is not a
// valid query).
func (bs *breakpoints) query(q string) []string {
	ids, _ := queryContexts(bs.target, q)
	return ids
}

// RegisterBreakpoints adds the Breakpoints service.
func (a *Agent) RegisterBreakpoints() {
	bt, bs := &a.bps, a.breaks
	bt.byID = map[string]*clientBreakpoint{}
	bt.byPlanted = map[*target.Breakpoint]*clientBreakpoint{}
	svc := a.srv.Service("Breakpoints")
	svc.Command("set", bs.set)
	svc.Command("add", bs.add)
	svc.Command("change", bs.change)
	svc.Command("enable", bs.enable(true))
	svc.Command("disable", bs.enable(false))
	svc.Command("remove", bs.remove)
	svc.Command("getIDs", bs.getIDs)
	svc.Command("getProperties", bs.getProperties)
	svc.Command("getStatus", bs.getStatus)
	svc.Command("getCapabilities", bs.getCapabilities)
}

// set replaces the channel's breakpoints with a list: those not in it are
// released, the others added or changed.
func (bs *breakpoints) set(c *tcf.Call) {
	args := c.Args()
	var list []map[string]any
	args.JSON(&list)
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	ch := c.Channel()
	keep := map[string]bool{}
	for _, p := range list {
		id, _ := p["ID"].(string)
		keep[id] = true
	}
	for _, id := range bs.channelBreakpoints(ch) {
		if !keep[id] {
			bs.release(ch, id)
		}
	}
	for _, p := range list {
		if err := bs.addBreakpoint(ch, p, true); err != nil {
			c.ReplyError(err)
			return
		}
	}
	c.ReplyError(nil)
}

// add adds (or changes) one breakpoint.
func (bs *breakpoints) add(c *tcf.Call) {
	args := c.Args()
	var p map[string]any
	args.JSON(&p)
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	c.ReplyError(bs.addBreakpoint(c.Channel(), p, false))
}

// change changes the properties of a breakpoint.
func (bs *breakpoints) change(c *tcf.Call) {
	args := c.Args()
	var p map[string]any
	args.JSON(&p)
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	id, _ := p["ID"].(string)
	cb, _ := bs.bt.get(id)
	if cb == nil {
		c.ReplyError(errNoBreakpoint(id))
		return
	}
	bs.updateBreakpoint(cb, p)
	c.ReplyError(nil)
}

// enable makes the command that enables (on) or disables breakpoints.
func (bs *breakpoints) enable(on bool) func(c *tcf.Call) {
	return func(c *tcf.Call) {
		bs.setEnabled(c, on)
	}
}

func (bs *breakpoints) setEnabled(c *tcf.Call, on bool) {
	args := c.Args()
	ids := args.Strings()
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	for _, id := range ids {
		cb, p := bs.bt.get(id)
		if cb == nil {
			continue
		}
		p["Enabled"] = on
		bs.updateBreakpoint(cb, p)
	}
	c.ReplyError(nil)
}

// remove releases the channel's hold on breakpoints.
func (bs *breakpoints) remove(c *tcf.Call) {
	args := c.Args()
	ids := args.Strings()
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	for _, id := range ids {
		bs.release(c.Channel(), id)
	}
	c.ReplyError(nil)
}

// getIDs lists every breakpoint of every channel.
func (bs *breakpoints) getIDs(c *tcf.Call) {
	bt := bs.bt
	if err := c.Args().End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	bt.mu.Lock()
	ids := make([]string, 0, len(bt.byID))
	for id := range bt.byID {
		ids = append(ids, id)
	}
	bt.mu.Unlock()
	sort.Strings(ids)
	c.Reply().Error(nil).Data(ids).Send()
}

// getProperties is a breakpoint's properties as last set.
func (bs *breakpoints) getProperties(c *tcf.Call) {
	if cb, p := bs.named(c); cb != nil {
		c.Reply().Error(nil).Data(p).Send()
	}
}

// getStatus is a breakpoint's planted instances and errors.
func (bs *breakpoints) getStatus(c *tcf.Call) {
	if cb, _ := bs.named(c); cb != nil {
		c.Reply().Error(nil).Data(bs.status(cb)).Send()
	}
}

// named reads a command's one argument, a breakpoint ID, and finds the
// breakpoint and a copy of its properties; on a bad argument or an unknown
// ID it replies with the error (and a null result) and returns nil.
func (bs *breakpoints) named(c *tcf.Call) (*clientBreakpoint, map[string]any) {
	args := c.Args()
	id := args.String()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return nil, nil
	}
	cb, p := bs.bt.get(id)
	if cb == nil {
		c.Reply().Error(errNoBreakpoint(id)).Null().Send()
	}
	return cb, p
}

// get returns the breakpoint id and a copy of its properties (nil for
// none).
func (bt *breakpointTable) get(id string) (*clientBreakpoint, map[string]any) {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	cb := bt.byID[id]
	if cb == nil {
		return nil, nil
	}
	return cb, cloneProps(cb.props)
}

// errNoBreakpoint is the error of a command naming an unknown breakpoint.
func errNoBreakpoint(id string) error {
	return tcf.Errorf(tcf.CodeInvalidContext, "no breakpoint %q", id)
}

// getCapabilities lists the breakpoint properties the agent understands.
func (bs *breakpoints) getCapabilities(c *tcf.Call) {
	args := c.Args()
	if args.Remaining() > 0 {
		_ = args.String()
	}
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).Data(map[string]any{
		"ID": true, "Location": true, "File": true, "Line": true, "Column": true,
		"Condition": true, "IgnoreCount": true, "Temporary": true, "Enabled": true,
		"BreakpointType": true, "ContextIds": true, "ContextNames": true, "ContextQuery": true,
		"ExecPaths": true, "AccessMode": 3, "Size": true, "ClientData": true,
		"StopGroup": false, "SkipPrologue": true, "Probe": true,
	}).Send()
}

func cloneProps(p map[string]any) map[string]any {
	out := make(map[string]any, len(p))
	for k, v := range p {
		out[k] = v
	}
	return out
}

// channelBreakpoints lists the IDs a channel holds.
func (bs *breakpoints) channelBreakpoints(ch *tcf.Channel) []string {
	bt := bs.bt
	bt.mu.Lock()
	defer bt.mu.Unlock()
	var ids []string
	for id, cb := range bt.byID {
		if cb.owners[ch] > 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

// addBreakpoint adds a channel's reference to a breakpoint, creating it (or,
// from set, updating it) as needed.
func (bs *breakpoints) addBreakpoint(ch *tcf.Channel, p map[string]any, fromSet bool) error {
	id, _ := p["ID"].(string)
	if id == "" {
		return tcf.Errorf(tcf.CodeInvalidContext, "breakpoint without an ID")
	}
	bt := bs.bt
	bt.mu.Lock()
	cb := bt.byID[id]
	isNew := cb == nil
	if isNew {
		cb = &clientBreakpoint{id: id, props: p, owners: map[*tcf.Channel]int{},
			planted: map[*target.Context][]*target.Breakpoint{}, errors: map[*target.Context]string{}}
		bt.byID[id] = cb
	}
	first := cb.owners[ch] == 0
	if !fromSet || first {
		cb.owners[ch]++
	}
	bt.mu.Unlock()
	if first {
		ch.OnClose(func() { bs.dropChannel(ch) })
	}
	if isNew {
		bs.events.emit("Breakpoints", "contextAdded", []any{p})
		bs.plantAll(cb)
	} else if fromSet {
		bs.updateBreakpoint(cb, p)
	}
	return nil
}

// release drops one of a channel's references; the breakpoint goes with the
// last reference.
func (bs *breakpoints) release(ch *tcf.Channel, id string) {
	if bs.drop(ch, id) {
		bs.events.emit("Breakpoints", "contextRemoved", []string{id})
	}
}

// drop is release without the event: it reports whether the breakpoint is
// gone (unplanted everywhere).
func (bs *breakpoints) drop(ch *tcf.Channel, id string) bool {
	bt := bs.bt
	bt.mu.Lock()
	cb := bt.byID[id]
	if cb == nil || cb.owners[ch] == 0 {
		bt.mu.Unlock()
		return false
	}
	cb.owners[ch]--
	if cb.owners[ch] == 0 {
		delete(cb.owners, ch)
	}
	gone := len(cb.owners) == 0
	if gone {
		delete(bt.byID, id)
	}
	bt.mu.Unlock()
	if gone {
		bs.unplantAll(cb)
	}
	return gone
}

// dropChannel releases everything a closed channel held.
// Threads stopped at breakpoints that go with the channel are resumed: a
// client that disconnects leaves no process stopped because of it.
func (bs *breakpoints) dropChannel(ch *tcf.Channel) {
	gone := map[*target.Breakpoint]bool{}
	for _, id := range bs.channelBreakpoints(ch) {
		bt := bs.bt
		bt.mu.Lock()
		cb := bt.byID[id]
		n := 0
		if cb != nil {
			n = cb.owners[ch]
			if len(cb.owners) == 1 {
				for _, list := range cb.planted {
					for _, bp := range list {
						gone[bp] = true
					}
				}
			}
		}
		bt.mu.Unlock()
		for ; n > 0; n-- {
			bs.release(ch, id)
		}
	}
	if len(gone) == 0 {
		return
	}
	for _, proc := range bs.target.Processes() {
		for _, th := range proc.Children() {
			state, reason, _ := th.State()
			if state != target.StateStopped || reason == nil || len(reason.Breakpoints) == 0 ||
				(reason.Kind != target.ReasonBreakpoint && reason.Kind != target.ReasonWatchpoint) {
				continue
			}
			ours := true
			for _, bp := range reason.Breakpoints {
				ours = ours && gone[bp]
			}
			if ours {
				if err := th.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
					bs.log.Warn("resuming a thread its closed channel's breakpoint stopped", "thread", th.ID(), "err", err)
				}
			}
		}
	}
}

func (bs *breakpoints) updateBreakpoint(cb *clientBreakpoint, p map[string]any) {
	bs.unplantAll(cb)
	bs.bt.mu.Lock()
	cb.props = p
	bs.bt.mu.Unlock()
	bs.events.emit("Breakpoints", "contextChanged", []any{p})
	bs.plantAll(cb)
}

// plantAll plants a breakpoint in every process of its scope and sends its
// status.
func (bs *breakpoints) plantAll(cb *clientBreakpoint) {
	for _, proc := range bs.target.Processes() {
		bs.plant(cb, proc)
	}
	bs.events.emit("Breakpoints", "status", cb.id, bs.status(cb))
}

// plantInProcess plants every enabled breakpoint in a new process (or after
// exec or a library load changed what locations resolve to).
func (bs *breakpoints) plantInProcess(proc *target.Context) {
	bt := bs.bt
	bt.mu.Lock()
	all := make([]*clientBreakpoint, 0, len(bt.byID))
	for _, cb := range bt.byID {
		all = append(all, cb)
	}
	bt.mu.Unlock()
	for _, cb := range all {
		if bs.plantedAsResolved(cb, proc) {
			continue
		}
		bs.unplant(cb, proc)
		bs.plant(cb, proc)
		bs.events.emit("Breakpoints", "status", cb.id, bs.status(cb))
	}
}

// plantedAsResolved reports whether cb is planted in proc exactly where its
// location resolves now (so a library load that changed nothing for it leaves
// it alone).
func (bs *breakpoints) plantedAsResolved(cb *clientBreakpoint, proc *target.Context) bool {
	bt := bs.bt
	bt.mu.Lock()
	p := cb.props
	loc := bt.locator
	list := cb.planted[proc]
	failed := cb.errors[proc] != ""
	bt.mu.Unlock()
	if failed || len(list) == 0 {
		return false
	}
	if enabled, ok := p["Enabled"].(bool); (ok && !enabled) || !bs.inScope(p, proc) {
		return false
	}
	addrs, _, err := bs.resolve(p, proc, loc)
	if err != nil || len(addrs) != len(list) {
		return false
	}
	for i, bp := range list {
		if bs.plantedAddress(bp) != addrs[i] {
			return false
		}
	}
	return true
}

func (bs *breakpoints) unplantAll(cb *clientBreakpoint) {
	bs.bt.mu.Lock()
	procs := make([]*target.Context, 0, len(cb.planted))
	for p := range cb.planted {
		procs = append(procs, p)
	}
	bs.bt.mu.Unlock()
	for _, p := range procs {
		bs.unplant(cb, p)
	}
}

func (bs *breakpoints) unplant(cb *clientBreakpoint, proc *target.Context) {
	bt := bs.bt
	bt.mu.Lock()
	list := cb.planted[proc]
	delete(cb.planted, proc)
	delete(cb.errors, proc)
	for _, bp := range list {
		delete(bt.byPlanted, bp)
	}
	bt.mu.Unlock()
	for _, bp := range list {
		bs.removePlanted(bp) // a probe or a breakpoint
	}
}

// plant resolves cb's location in proc and plants it there.
func (bs *breakpoints) plant(cb *clientBreakpoint, proc *target.Context) {
	bt := bs.bt
	bt.mu.Lock()
	p := cb.props
	loc := bt.locator
	bt.mu.Unlock()
	if enabled, ok := p["Enabled"].(bool); ok && !enabled {
		return
	}
	if !bs.inScope(p, proc) {
		return
	}
	addrs, spec, err := bs.resolve(p, proc, loc)
	var planted []*target.Breakpoint
	for _, addr := range addrs {
		s := spec
		s.Addr = addr
		s.Internal = true
		s.OnHit = bs.onBreakpointHit
		pbp, why := bs.plantProbe(proc, p, s) // breakpoints_probe.go
		if pbp != nil {
			planted = append(planted, pbp)
			continue
		}
		bp, perr := bs.target.SetBreakpoint(proc, s)
		if perr != nil {
			err = perr
			continue
		}
		bs.noteProbeFallback(bp, why)
		planted = append(planted, bp)
	}
	if len(addrs) == 0 && err == nil {
		err = fmt.Errorf("location not found")
	}
	bt.mu.Lock()
	cb.planted[proc] = planted
	for _, bp := range planted {
		bt.byPlanted[bp] = cb
	}
	if err != nil {
		cb.errors[proc] = err.Error()
	}
	bt.mu.Unlock()
}

// inScope applies ContextIds, ContextNames, ContextQuery and ExecPaths.
func (bs *breakpoints) inScope(p map[string]any, proc *target.Context) bool {
	if ids, ok := p["ContextIds"].([]any); ok && len(ids) > 0 {
		match := false
		for _, v := range ids {
			s, _ := v.(string)
			if s == string(proc.ID()) || strings.HasPrefix(s, string(proc.ID())+".") {
				match = true
			}
		}
		if !match {
			return false
		}
	}
	if names, ok := p["ContextNames"].([]any); ok && len(names) > 0 {
		match := false
		for _, v := range names {
			if s, _ := v.(string); s == proc.Name() {
				match = true
			}
		}
		if !match {
			return false
		}
	}
	if q, ok := p["ContextQuery"].(string); ok && q != "" {
		match := false
		for _, id := range bs.query(q) {
			if id == string(proc.ID()) || strings.HasPrefix(id, string(proc.ID())+".") {
				match = true
			}
		}
		if !match {
			return false
		}
	}
	if paths, ok := p["ExecPaths"].([]any); ok && len(paths) > 0 {
		exe, _ := proc.Executable()
		match := false
		for _, v := range paths {
			if s, _ := v.(string); s != "" && (s == exe || strings.HasSuffix(exe, "/"+s)) {
				match = true
			}
		}
		if !match {
			return false
		}
	}
	return true
}

// status is a breakpoint's TCF status object.
func (bs *breakpoints) status(cb *clientBreakpoint) map[string]any {
	bt := bs.bt
	bt.mu.Lock()
	defer bt.mu.Unlock()
	var inst []map[string]any
	for proc, list := range cb.planted {
		for _, bp := range list {
			typ := "Software"
			switch bp.Spec.Kind {
			case target.BreakpointHardware, target.Watchpoint:
				typ = "Hardware"
			}
			inst = append(inst, map[string]any{
				"LocationContext": string(proc.ID()), "Address": bs.plantedAddress(bp), "Size": uint64(max(bp.Spec.Size, 1)),
				"BreakpointType": typ, "HitCount": cb.hits,
			})
			bs.probeStatus(bp, inst[len(inst)-1])
		}
	}
	for proc, e := range cb.errors {
		inst = append(inst, map[string]any{"LocationContext": string(proc.ID()), "Error": e})
	}
	if len(inst) == 0 {
		return map[string]any{}
	}
	sort.Slice(inst, func(i, j int) bool {
		ai, _ := inst[i]["Address"].(uint64)
		aj, _ := inst[j]["Address"].(uint64)
		return ai < aj
	})
	return map[string]any{"Instances": inst}
}

// onBreakpointHit decides whether a hit of a client breakpoint is shown: the
// ignore count and the condition are applied here, in the agent.
func (bs *breakpoints) onBreakpointHit(thread *target.Context, bp *target.Breakpoint) *target.SuspendReason {
	bt := bs.bt
	bt.mu.Lock()
	cb := bt.byPlanted[bp]
	if cb == nil || cb.spent {
		bt.mu.Unlock()
		return nil
	}
	p := cb.props
	cond := bt.condition
	bt.mu.Unlock()
	// As the C agent: a hit whose condition is false does not count; the
	// ignore count skips the first counted hits.
	var condErr string
	if expr, _ := p["Condition"].(string); strings.TrimSpace(expr) != "" && !bs.conditionCompiled(bp) {
		if cond == nil {
			condErr = "cannot evaluate the condition: no expression service"
		} else if ok, err := cond(thread, expr); err != nil {
			condErr = "cannot evaluate the condition: " + err.Error()
		} else if !ok {
			return nil
		}
	}
	bt.mu.Lock()
	cb.hits++
	hits := cb.hits
	bt.mu.Unlock()
	// Mostly the stop follows at once, written with this status.
	bs.events.emitBehind("Breakpoints", "status", cb.id, bs.status(cb))
	if ignore, ok := propInt(p, "IgnoreCount"); ok && hits <= ignore && condErr == "" {
		return nil
	}
	if condErr != "" {
		// A condition that cannot be evaluated stops, saying why.
		return &target.SuspendReason{Kind: target.ReasonBreakpoint, Breakpoints: []*target.Breakpoint{bp}, Message: condErr}
	}
	if tmp, _ := p["Temporary"].(bool); tmp {
		// Removed once the stop is reported (releaseSpent), so that the
		// stop still names it in BPs.
		bt.mu.Lock()
		cb.spent = true
		bt.mu.Unlock()
	}
	kind := target.ReasonBreakpoint
	if bp.Spec.Kind == target.Watchpoint {
		kind = target.ReasonWatchpoint
	}
	return &target.SuspendReason{Kind: kind, Breakpoints: []*target.Breakpoint{bp}}
}

// releaseSpent removes the Temporary breakpoints a reported stop was at.
func (bs *breakpoints) releaseSpent(r *target.SuspendReason) {
	if ids := bs.takeSpent(r); len(ids) > 0 {
		bs.events.emit("Breakpoints", "contextRemoved", ids)
	}
}

// takeSpent removes the Temporary breakpoints a stop was at (their int3s
// and probes out of the code) and returns the IDs gone, whose
// contextRemoved the caller sends.
func (bs *breakpoints) takeSpent(r *target.SuspendReason) []string {
	if r == nil {
		return nil
	}
	var gone []string
	for _, bp := range r.Breakpoints {
		bs.bt.mu.Lock()
		cb := bs.bt.byPlanted[bp]
		bs.bt.mu.Unlock()
		if cb == nil || !cb.spent {
			continue
		}
		for ch, n := range bs.owners(cb) {
			for ; n > 0; n-- {
				if bs.drop(ch, cb.id) {
					gone = append(gone, cb.id)
				}
			}
		}
	}
	return gone
}

func (bs *breakpoints) owners(cb *clientBreakpoint) map[*tcf.Channel]int {
	bs.bt.mu.Lock()
	defer bs.bt.mu.Unlock()
	out := map[*tcf.Channel]int{}
	for ch, n := range cb.owners {
		out[ch] = n
	}
	return out
}
