package services

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/unwind"
	"github.com/sondedbg/sonde/variables"
)

// Expressions: a client creates an expression in the scope of a thread or a
// stack frame ("FP<n>.<thread>") and evaluates it while the thread stays
// stopped. Created expressions have IDs "EXPR<n>" and belong to the channel
// that made them: they are dropped when it closes. The locals of a frame are
// listed by getChildren(frame) as expressions with IDs "EL<k>@<frame ID>"
// (the k-th variable visible in the frame), computed on demand, so that
// refreshing a Variables view creates nothing.

type exprTable struct {
	mu       sync.Mutex
	next     int
	byID     map[string]*exprEntry
	watching map[*tcf.Channel]bool // channels whose close drops their expressions
}

type exprEntry struct {
	id, parent, text, lang string
	ch                     *tcf.Channel
}

// maxExpressions bounds what one agent keeps for all channels.
const maxExpressions = 1 << 16

// frameStacks caches, per thread, the unwind with registers that value
// reading needs, for the StackTrace service's current trace.
type frameStacks struct {
	mu     sync.Mutex
	stacks map[*target.Context]frameStack
	envs   map[string]cachedEnv // by scope ID
}

type cachedEnv struct {
	trace *unwind.Trace
	ee    *exprEnv
}

type frameStack struct {
	trace *unwind.Trace
	stack *session.Stack
}

// exprEnv is everything an expression in one scope needs.
type exprEnv struct {
	env     *expr.Env
	thread  *target.Context
	frame   *session.Frame
	frameID string
	vars    []*variables.Variable // visible variables: innermost scope first, declaration order
}

// expressionsSvc is the Expressions service's commands; its state is the agent's dataState (expressions_state.go).
type expressionsSvc struct {
	a *Agent
}

// RegisterExpressions adds the Expressions service and makes breakpoint
// conditions evaluate with it.
func (a *Agent) RegisterExpressions() {
	es := &expressionsSvc{a: a}
	a.SetConditionEvaluator(a.evalCondition)
	svc := a.srv.Service("Expressions")
	queryByID(svc, "getContext", func(id string) (any, error) { return a.expressionContext(id) })
	queryByID(svc, "getChildren", func(id string) (any, error) { return a.expressionChildren(id) })
	svc.Command("create", es.create)
	svc.Command("createInScope", es.createInScope)
	svc.Command("evaluate", es.evaluate)
	svc.Command("assign", es.assign)
	svc.Command("dispose", es.dispose)
}

// createReply creates an expression for create and createInScope and replies
// with its properties.
func (es *expressionsSvc) createReply(c *tcf.Call, parent, lang, text string) {
	props, err := es.a.createExpression(c.Channel(), parent, lang, text)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).Data(props).Send()
}

func (es *expressionsSvc) create(c *tcf.Call) {
	args := c.Args()
	parent := args.String()
	var lang *string
	args.JSON(&lang)
	text := args.String()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	l := ""
	if lang != nil {
		l = *lang
	}
	es.createReply(c, parent, l, text)
}

func (es *expressionsSvc) createInScope(c *tcf.Call) {
	args := c.Args()
	var scope map[string]any
	args.JSON(&scope)
	text := args.String()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	parent, _ := scope["ContextID"].(string)
	lang, _ := scope["Language"].(string)
	es.createReply(c, parent, lang, text)
}

func (es *expressionsSvc) evaluate(c *tcf.Call) {
	a := es.a
	args := c.Args()
	id := args.String()
	if err := args.End(); err != nil {
		c.Reply().Null().Error(err).Null().Send()
		return
	}
	value, props, err := a.evaluateExpression(c.Channel(), id)
	r := c.Reply()
	if value == nil {
		r.Null()
	} else {
		r.Binary(value)
	}
	r = r.Error(err)
	if props == nil {
		r.Null()
	} else {
		r.Data(props)
	}
	r.Send()
}

func (es *expressionsSvc) assign(c *tcf.Call) {
	a := es.a
	args := c.Args()
	id := args.String()
	data := args.Binary()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Send()
		return
	}
	err := a.assignExpression(id, data)
	c.Reply().Error(err).Send()
	if err == nil {
		a.emit("Expressions", "valueChanged", id)
	}
}

func (es *expressionsSvc) dispose(c *tcf.Call) {
	a := es.a
	args := c.Args()
	id := args.String()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Send()
		return
	}
	a.data().exprs.mu.Lock()
	_, ok := a.data().exprs.byID[id]
	delete(a.data().exprs.byID, id)
	a.data().exprs.mu.Unlock()
	if !ok && !strings.HasPrefix(id, "EL") {
		c.Reply().Error(tcf.Errorf(tcf.CodeInvalidContext, "no expression %q", id)).Send()
		return
	}
	c.Reply().Error(nil).Send()
}

func invalidExpr(id string) error { return tcf.Errorf(tcf.CodeInvalidContext, "no expression %q", id) }

// createExpression checks text in the scope of parent and records it.
func (a *Agent) createExpression(ch *tcf.Channel, parent, lang, text string) (map[string]any, error) {
	if lang != "" && !strings.EqualFold(lang, "C") && !strings.EqualFold(lang, "C++") {
		return nil, tcf.Errorf(tcf.CodeUnsupported, "expression language %q is not supported (C and C++ are)", lang)
	}
	ee, err := a.scopeEnv(parent)
	if err != nil {
		return nil, err
	}
	n, err := expr.Parse(text, ee.env.IsType)
	if err != nil {
		return nil, err
	}
	// Evaluated for its type: $printf is checked, not run (as the C agent
	// evaluates in its type-only mode here).
	res, evalErr := expr.Evaluate(n, a.withIntrinsics(ee, nil))
	if evalErr != nil && (errCode(evalErr) == tcf.CodeSymbolNotFound || malformed(evalErr)) {
		return nil, evalErr
	}
	a.data().exprs.mu.Lock()
	if len(a.data().exprs.byID) >= maxExpressions {
		a.data().exprs.mu.Unlock()
		return nil, tcf.Errorf(tcf.CodeOther, "too many expressions (%d): dispose some", maxExpressions)
	}
	a.data().exprs.next++
	e := &exprEntry{id: "EXPR" + strconv.Itoa(a.data().exprs.next), parent: parent, text: text, lang: lang, ch: ch}
	t := &a.data().exprs
	t.byID[e.id] = e
	watch := ch != nil && !t.watching[ch]
	if watch {
		t.watching[ch] = true
	}
	t.mu.Unlock()
	if watch {
		ch.OnClose(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			for id, x := range t.byID {
				if x.ch == ch {
					delete(t.byID, id)
				}
			}
			delete(t.watching, ch)
		})
	}
	return a.exprProps(e.id, parent, text, ee, res, n), nil
}

// malformed reports an error in the text itself, not in the state of the
// target: a $name misused, a bad $printf call.
func malformed(err error) bool {
	var pe *printfError
	var ee *expr.Error
	return errors.As(err, &pe) && pe.code == 0 || errors.As(err, &ee) && ee.Kind == expr.ErrSyntax
}

// errCode returns the TCF code of an error (OTHER when it has none).
func errCode(err error) int {
	var c interface{ TCFCode() int }
	if errors.As(err, &c) {
		return c.TCFCode()
	}
	return tcf.CodeOther
}

// exprProps are an expression context's properties.
func (a *Agent) exprProps(id, parent, text string, ee *exprEnv, res *expr.Result, n expr.Node) map[string]any {
	p := map[string]any{"ID": id, "ParentID": parent, "Expression": text, "Language": "C",
		"HasFuncCall": hasCall(n), "CanAssign": false}
	if res != nil {
		p["CanAssign"] = res.CanAssign()
		if res.Type != nil {
			p["Type"] = a.typeID(ee, res.Type)
			p["Class"] = typeClass(res.Type)
			if s := res.Type.ByteSize(); s >= 0 {
				p["Size"] = s
			}
		}
		if res.BitSize > 0 {
			p["Bits"] = res.BitSize
		}
		if res.Variable != nil {
			p["SymbolID"] = a.variableSymbolID(ee, res.Variable)
		}
	}
	return p
}

func hasCall(n expr.Node) bool {
	found := false
	var walk func(n expr.Node, d int)
	walk = func(n expr.Node, d int) {
		if found || n == nil || d > expr.MaxDepth*2 {
			return
		}
		switch x := n.(type) {
		case *expr.Call:
			// The debugger's own functions ($printf) run in the agent, not
			// in the target: no call as the C agent counts them.
			if _, own := x.Fn.(*expr.Register); !own {
				found = true
				return
			}
			for _, arg := range x.Args {
				walk(arg, d+1)
			}
		case *expr.Unary:
			walk(x.X, d+1)
		case *expr.Binary:
			walk(x.X, d+1)
			walk(x.Y, d+1)
		case *expr.Cond:
			walk(x.C, d+1)
			walk(x.X, d+1)
			walk(x.Y, d+1)
		case *expr.Member:
			walk(x.X, d+1)
		case *expr.Index:
			walk(x.X, d+1)
			walk(x.I, d+1)
		case *expr.Cast:
			walk(x.X, d+1)
		}
	}
	walk(n, 0)
	return found
}

// lookupExpr finds a created expression or a frame-local one.
func (a *Agent) lookupExpr(id string) (parent, text string, local int, err error) {
	if rest, ok := strings.CutPrefix(id, "EL"); ok {
		k, frame, ok := strings.Cut(rest, "@")
		n, err := strconv.Atoi(k)
		if !ok || err != nil || n < 0 {
			return "", "", 0, invalidExpr(id)
		}
		return frame, "", n, nil
	}
	a.data().exprs.mu.Lock()
	e := a.data().exprs.byID[id]
	a.data().exprs.mu.Unlock()
	if e == nil {
		return "", "", 0, invalidExpr(id)
	}
	return e.parent, e.text, -1, nil
}

// evalExpr evaluates an expression ID in its scope, $printf writing to out.
func (a *Agent) evalExpr(id string, out printfOutput) (*exprEnv, expr.Node, *expr.Result, error) {
	parent, text, local, err := a.lookupExpr(id)
	if err != nil {
		return nil, nil, nil, err
	}
	ee, err := a.scopeEnv(parent)
	if err != nil {
		return nil, nil, nil, err
	}
	if local >= 0 {
		if local >= len(ee.vars) {
			return nil, nil, nil, invalidExpr(id)
		}
		v := ee.vars[local]
		n := &expr.Ident{Name: v.Name}
		// Evaluate exactly that variable (an inner one may shadow its name).
		env := *ee.env
		env.Scopes = []*variables.Scope{{Vars: []*variables.Variable{v}}}
		res, err := expr.Evaluate(n, &env)
		return ee, n, res, err
	}
	n, err := expr.Parse(text, ee.env.IsType)
	if err != nil {
		return ee, nil, nil, err
	}
	res, err := expr.Evaluate(n, a.withIntrinsics(ee, out))
	return ee, n, res, err
}

func (a *Agent) expressionContext(id string) (map[string]any, error) {
	parent, text, local, err := a.lookupExpr(id)
	if err != nil {
		return nil, err
	}
	ee, n, res, evalErr := a.evalExpr(id, nil) // properties only: $printf is not run
	if ee == nil {
		return nil, evalErr
	}
	if local >= 0 {
		text = ee.vars[local].Name
	}
	return a.exprProps(id, parent, text, ee, res, n), nil
}

// evaluateExpression evaluates for the client on ch: $printf writes to its
// DPrintf stream.
func (a *Agent) evaluateExpression(ch *tcf.Channel, id string) ([]byte, map[string]any, error) {
	ee, _, res, err := a.evalExpr(id, a.channelOutput(ch))
	if err != nil {
		return nil, nil, err
	}
	props := map[string]any{"BigEndian": false}
	if res.Type != nil {
		props["Type"] = a.typeID(ee, res.Type)
		props["Class"] = typeClass(res.Type)
	}
	if res.HasAddress {
		props["Address"] = res.Address
	}
	if res.InRegister {
		if rid := a.registerID(ee.thread, res.Register); rid != "" {
			props["Register"] = rid
		}
	}
	if res.Variable != nil {
		props["Symbol"] = a.variableSymbolID(ee, res.Variable)
	}
	if res.BitSize > 0 {
		props["BitStride"] = res.BitSize
	}
	if res.Value == nil && res.LoadErr != nil {
		return nil, props, res.LoadErr
	}
	return res.Value, props, nil
}

func (a *Agent) assignExpression(id string, data []byte) error {
	parent, text, local, err := a.lookupExpr(id)
	if err != nil {
		return err
	}
	ee, err := a.scopeEnv(parent)
	if err != nil {
		return err
	}
	var n expr.Node
	env := a.withIntrinsics(ee, nil) // an assignment does not print
	if local >= 0 {
		if local >= len(ee.vars) {
			return invalidExpr(id)
		}
		v := ee.vars[local]
		n = &expr.Ident{Name: v.Name}
		e := *ee.env
		e.Scopes = []*variables.Scope{{Vars: []*variables.Variable{v}}}
		env = &e
	} else if n, err = expr.Parse(text, env.IsType); err != nil {
		return err
	}
	if err := expr.Assign(n, env, data); err != nil {
		return err
	}
	a.stacks.forget(ee.thread) // registers may have changed: unwind again
	return nil
}

// expressionChildren lists the locals and parameters of a frame (or of a
// thread's top frame) as expressions.
func (a *Agent) expressionChildren(id string) ([]string, error) {
	if strings.HasPrefix(id, "EXPR") || strings.HasPrefix(id, "EL") {
		if _, _, _, err := a.lookupExpr(id); err != nil {
			return nil, err
		}
		return []string{}, nil
	}
	ee, err := a.scopeEnv(id)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ee.vars))
	for k := range ee.vars {
		out = append(out, "EL"+strconv.Itoa(k)+"@"+ee.frameID)
	}
	return out, nil
}

// evalCondition is the breakpoint condition evaluator: the condition is
// evaluated in the stopped thread's top frame; $printf writes to every open
// DPrintf stream (a dynamic-printf breakpoint's condition is
// `$printf(...)` or `(cond) && $printf(...)`, false either way).
func (a *Agent) evalCondition(thread *target.Context, text string) (bool, error) {
	a.stacks.forget(thread)
	ee, err := a.scopeEnv(frameID(0, thread))
	if err != nil {
		return false, err
	}
	return expr.Condition(text, a.withIntrinsics(ee, a.breaks.writeDPrintfAtHit))
}

// scopeEnv prepares the evaluation environment of a frame, thread or
// process ID (a thread means its top frame; a process only has globals).
func (a *Agent) scopeEnv(id string) (*exprEnv, error) {
	if id == "" {
		return nil, tcf.Errorf(tcf.CodeInvalidContext, "expression scope is missing")
	}
	var n int
	var thread *target.Context
	var err error
	if strings.HasPrefix(id, "FP") {
		n, thread, err = a.ParseFrameID(id)
	} else {
		thread, err = a.lookup(id)
	}
	if err != nil {
		return nil, err
	}
	if thread.IsProcess() {
		th := thread.Children()
		if len(th) == 0 {
			return nil, tcf.Errorf(tcf.CodeInvalidContext, "process %s has no threads", thread.ID())
		}
		thread = th[0]
	}
	tr, err := a.Stack(thread)
	if err != nil {
		return nil, err
	}
	if tr == nil || n >= len(tr.Frames) {
		return nil, tcf.Errorf(tcf.CodeInvalidContext, "no stack frame %q", id)
	}
	// An environment stays valid while the thread's stack does (until it
	// runs, or an assignment changes registers).
	d := a.data()
	d.frames.mu.Lock()
	if c, ok := d.frames.envs[id]; ok && c.trace == tr {
		d.frames.mu.Unlock()
		return c.ee, nil
	}
	d.frames.mu.Unlock()
	ee, err := a.buildEnv(thread, tr, n)
	if err != nil {
		return nil, err
	}
	d.frames.mu.Lock()
	if len(d.frames.envs) > 4096 {
		d.frames.envs = map[string]cachedEnv{}
	}
	d.frames.envs[id] = cachedEnv{trace: tr, ee: ee}
	d.frames.mu.Unlock()
	return ee, nil
}

// buildEnv prepares the environment of frame n of a thread's trace.
func (a *Agent) buildEnv(thread *target.Context, tr *unwind.Trace, n int) (*exprEnv, error) {
	id := frameID(n, thread)
	st, err := a.frameStack(thread, tr)
	if err != nil {
		return nil, err
	}
	sf := tr.Frames[n]
	f := st.Frame(sf.Physical)
	if f == nil || f.PC() != sf.PC {
		f = st.FrameAt(sf.PC, 0)
	}
	if f == nil {
		return nil, tcf.Errorf(tcf.CodeInvalidContext, "stack frame %q has no registers", id)
	}
	ee := &exprEnv{thread: thread, frame: f, frameID: frameID(n, thread)}
	ee.env = &expr.Env{Frame: f, Arch: a.target.Arch(), Function: f.FunctionAddress, Global: a.globalLookup(thread, f)}
	ee.env.Symbol = func(sym string) (expr.SymbolRef, error) { return a.resolveSymbolRef(ee, sym) }
	r, err := f.Reader()
	if err != nil || r == nil {
		return ee, nil // no DWARF here: registers, constants and other modules' globals only
	}
	ee.env.Reader = r
	chain, err := r.ScopesAt(variables.LookupPC(f))
	if err != nil {
		return nil, tcf.Errorf(tcf.CodeInvalidDWARF, "%v", err)
	}
	inline := 0
	for k := n - 1; k >= 0 && tr.Frames[k].Physical == sf.Physical; k-- {
		inline++
	}
	ee.env.Scopes = variables.FrameScopes(chain, inline)
	for _, s := range ee.env.Scopes {
		for _, v := range s.Vars {
			if v.Name != "" && (!v.Artificial || v.Name == "this") {
				ee.vars = append(ee.vars, v)
			}
		}
	}
	return ee, nil
}

// frameStack returns the register-carrying unwind for the thread's current
// trace.
func (a *Agent) frameStack(thread *target.Context, tr *unwind.Trace) (*session.Stack, error) {
	a.data().frames.mu.Lock()
	fs, ok := a.data().frames.stacks[thread]
	a.data().frames.mu.Unlock()
	if ok && fs.trace == tr {
		return fs.stack, nil
	}
	st, err := a.session.StackOf(thread, *tr)
	if err != nil {
		return nil, err
	}
	a.data().frames.mu.Lock()
	if len(a.data().frames.stacks) > 4096 {
		a.data().frames.stacks = map[*target.Context]frameStack{}
	}
	a.data().frames.stacks[thread] = frameStack{trace: tr, stack: st}
	a.data().frames.mu.Unlock()
	return st, nil
}

// globalLookup resolves names in the other modules of the process.
func (a *Agent) globalLookup(thread *target.Context, f *session.Frame) func(string) (*variables.Variable, *variables.Reader, uint64, error) {
	return func(name string) (*variables.Variable, *variables.Reader, uint64, error) {
		mods, err := a.session.Modules(thread)
		if err != nil {
			return nil, nil, 0, err
		}
		// The frame's own module was searched first, by the frame.
		others := make([]*session.Module, 0, len(mods))
		for _, m := range mods {
			if m != f.Module() {
				others = append(others, m)
			}
		}
		return a.session.FindGlobal(others, name)
	}
}

// registerID names a DWARF register of a thread as the Registers service
// does.
func (a *Agent) registerID(thread *target.Context, dwarf int) string {
	for i, r := range a.target.Arch().Registers {
		if r.DWARF == dwarf {
			return fmt.Sprintf("R%d.%s", i, thread.ID())
		}
	}
	return ""
}

// leUint decodes a little-endian unsigned integer of up to 8 bytes.
func leUint(b []byte) uint64 {
	var w [8]byte
	copy(w[:], b)
	return binary.LittleEndian.Uint64(w[:])
}

// resolveSymbolRef resolves the ${ID} references of expressions that
// Eclipse builds for its Variables view: types (casts), members, registers
// and variables, by their protocol IDs.
func (a *Agent) resolveSymbolRef(ee *exprEnv, id string) (expr.SymbolRef, error) {
	if strings.HasPrefix(id, "R") && !strings.HasPrefix(id, "RG") {
		_, reg, _, err := a.parseRegisterID(id)
		if err != nil {
			return expr.SymbolRef{}, err
		}
		if reg == nil || reg.DWARF < 0 {
			return expr.SymbolRef{}, tcf.Errorf(tcf.CodeInvalidContext, "register %q has no DWARF number", id)
		}
		return expr.SymbolRef{Register: reg.DWARF, IsRegister: true}, nil
	}
	ref, ok, err := a.parseDataSymbol(id)
	if err != nil {
		return expr.SymbolRef{}, err
	}
	if !ok {
		return expr.SymbolRef{}, tcf.Errorf(tcf.CodeSymbolNotFound, "no symbol %q", id)
	}
	switch ref.kind {
	case "T", "TS":
		return expr.SymbolRef{Type: ref.t}, nil
	case "M":
		return expr.SymbolRef{Field: &ref.t.Strip().Fields[ref.index]}, nil
	case "L":
		return expr.SymbolRef{Variable: ref.v, Reader: ref.reader, Frame: ref.ee.frame}, nil
	case "G":
		var f variables.Frame = ee.frame
		if m := ee.frame.Module(); m == nil || m.Start != ref.mod {
			f = biasedFrame{ee.frame, a.moduleBias(ref.proc, ref.mod)}
		}
		return expr.SymbolRef{Variable: ref.v, Reader: ref.reader, Frame: f}, nil
	}
	return expr.SymbolRef{}, tcf.Errorf(tcf.CodeSymbolNotFound, "%q names no value, type or member", id)
}

// biasedFrame is a frame seen from another module (for its globals).
type biasedFrame struct {
	*session.Frame
	bias uint64
}

func (b biasedFrame) Bias() uint64 { return b.bias }
