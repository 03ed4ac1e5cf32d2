package dap

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/variables"
)

// evaluate answers watch, hover and repl requests with the C/C++ expression
// language of package expr, in the frame named (the top frame of a stopped
// thread when none is, the process's globals when no thread is stopped). In
// the repl a few debugger commands are understood too (see repl.go).
func (s *Server) evaluate(r *request) (any, error) {
	var a godap.EvaluateArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	text := strings.TrimSpace(a.Expression)
	hex := a.Format != nil && a.Format.Hex
	whatis := false
	if a.Context == "repl" {
		if out, ok, err := s.replCommand(d, a.FrameId, text); ok {
			if err != nil {
				return nil, err
			}
			return godap.EvaluateResponseBody{Result: out}, nil
		}
		if cmd, h, w, err := replPrint(text, hex); cmd != text || err != nil {
			// "p + 1", with a variable p, is an expression: a line
			// that evaluates as one is one.
			if !s.replEvaluates(d, a.FrameId, text) {
				if err != nil {
					return nil, err
				}
				text, hex, whatis = cmd, h, w
			}
		}
	}
	if text == "" {
		return nil, errorf("empty expression")
	}
	fe, h, err := s.evalEnv(d, a.FrameId)
	if err != nil {
		return nil, err
	}
	res, err := expr.Eval(text, fe.env)
	if err != nil {
		return nil, err
	}
	if me := (*variables.MemoryError)(nil); res.Value == nil && res.Ref == nil && errors.As(res.LoadErr, &me) {
		// *(int *)0: an error, as gdb's print and lldb answer it, not a
		// value reading "<error ...>".
		return nil, me
	}
	if whatis {
		return godap.EvaluateResponseBody{Result: "type = " + fe.resultType(res)}, nil
	}
	body := godap.EvaluateResponseBody{Result: s.formatResult(fe, res, hex), Type: fe.resultType(res)}
	if res.Value != nil || res.HasAddress {
		dv := godap.Variable{}
		s.describeParts(&dv, fe, h, res.Type, text)
		resultParts(&dv, fe, res)
		body.VariablesReference, body.NamedVariables, body.IndexedVariables = dv.VariablesReference, dv.NamedVariables, dv.IndexedVariables
	}
	if res.HasAddress {
		body.MemoryReference = hexAddr(res.Address)
	}
	if a.Context == "repl" || a.Context == "hover" {
		body.Type = fe.resultType(res)
	}
	return body, nil
}

// evalEnv returns the environment of a frame id, or of the first stopped
// thread's top frame, or the globals.
func (s *Server) evalEnv(d *debuggee, frameID int) (*frameEnv, varHandle, error) {
	if frameID != 0 {
		ref, ok := s.handles.frame(frameID)
		if !ok {
			return nil, varHandle{}, errorf("no frame %d (frames are valid while their thread is stopped)", frameID)
		}
		fe, err := d.env(ref.thread, ref.index)
		return fe, varHandle{frame: frameID, thread: ref.thread}, err
	}
	for _, th := range d.proc.Children() {
		if st, _, _ := th.State(); st == target.StateStopped {
			if fe, err := d.env(th, 0); err == nil {
				return fe, varHandle{frame: s.handles.frameID(th, 0), thread: th}, nil
			}
		}
	}
	return d.globalEnv(), varHandle{}, nil
}

// globalEnv evaluates in the process's static data: no registers.
func (d *debuggee) globalEnv() *frameEnv {
	f := &staticFrame{proc: d.proc}
	return &frameEnv{env: &expr.Env{Frame: f, Arch: d.tgt.Arch(), Global: d.globalLookup(d.proc, nil)}}
}

// staticFrame is a frame with memory and no registers.
type staticFrame struct{ proc *target.Context }

func (f *staticFrame) ReadMemory(buf []byte, addr uint64) (int, error) {
	return f.proc.ReadMemory(addr, buf)
}
func (f *staticFrame) Register(reg int) ([]byte, error) {
	return nil, errors.New("no registers: no thread is stopped")
}
func (f *staticFrame) PC() uint64                                   { return 0 }
func (f *staticFrame) Exact() bool                                  { return true }
func (f *staticFrame) CFA() (uint64, error)                         { return 0, errors.New("no frame") }
func (f *staticFrame) Bias() uint64                                 { return 0 }
func (f *staticFrame) Caller() (variables.Frame, *variables.Reader) { return nil, nil }
func (f *staticFrame) WriteMemory(addr uint64, data []byte) error {
	_, err := f.proc.WriteMemory(addr, data)
	return err
}
func (f *staticFrame) WriteRegister(reg int, data []byte) error {
	return errors.New("no registers: no thread is stopped")
}

// functionLookup finds a function named in an expression: in the frame's
// module first, then in every module (its DWARF, else its ELF symbols), as
// gdb does; a PLT stub is no function's address.
func (d *debuggee) functionLookup(th *target.Context, f interface {
	FunctionAddress(string) (uint64, bool)
}) func(string) (uint64, bool) {
	return func(name string) (uint64, bool) {
		if a, ok := f.FunctionAddress(name); ok {
			return a, true
		}
		addrs, _ := d.sess.FunctionAddresses(th, name)
		if len(addrs) == 0 {
			addrs, _ = d.sess.SymbolAddresses(th, name)
		}
		for _, a := range addrs {
			if _, _, k := d.sess.Trampoline(th, a); k == target.NotTrampoline {
				return a, true
			}
		}
		return 0, false
	}
}

// assign evaluates lhs = rhs in fe and returns the new value of lhs.
func (s *Server) assign(d *debuggee, fe *frameEnv, lhs, rhs string, hex bool) (*expr.Result, string, error) {
	if d.core {
		return nil, "", errReadOnly
	}
	if _, err := expr.Eval("("+lhs+") = ("+rhs+")", fe.env); err != nil {
		return nil, "", err
	}
	// Registers or memory changed: what was read at this stop is stale.
	s.invalidateValues(d)
	res, err := expr.Eval(lhs, fe.env)
	if err != nil {
		return nil, "", err
	}
	return res, s.formatResult(fe, res, hex), nil
}

// invalidateValues drops cached unwinds whose registers or memory may have
// changed, keeping frame and variable references (they are re-evaluated).
func (s *Server) invalidateValues(d *debuggee) {
	s.handles.mu.Lock()
	for _, st := range s.handles.stops {
		st.mu.Lock()
		st.stack, st.trace = nil, nil
		st.envs = map[int]*frameEnv{}
		st.mu.Unlock()
	}
	s.handles.mu.Unlock()
	if s.client.SupportsInvalidatedEvent {
		s.sendEvent("invalidated", godap.InvalidatedEventBody{Areas: []godap.InvalidatedAreas{"variables"}})
	}
}

func (s *Server) setVariable(r *request) (any, error) {
	var a godap.SetVariableArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	h, ok := s.handles.variable(a.VariablesReference)
	if !ok {
		return nil, errorf("no variables reference %d", a.VariablesReference)
	}
	fe, err := s.handleEnv(d, h)
	if err != nil {
		return nil, err
	}
	lhs, err := s.childExpr(h, fe, a.Name)
	if err != nil {
		return nil, err
	}
	hex := a.Format != nil && a.Format.Hex
	fe, err = s.handleEnv(d, h)
	if err != nil {
		return nil, err
	}
	res, text, err := s.assign(d, fe, lhs, a.Value, hex)
	if err != nil {
		return nil, err
	}
	fe, _ = s.handleEnv(d, h)
	body := godap.SetVariableResponseBody{Value: text, Type: fe.resultType(res)}
	dv := godap.Variable{}
	if fe != nil {
		s.describeParts(&dv, fe, h, res.Type, lhs)
	}
	body.VariablesReference, body.NamedVariables, body.IndexedVariables = dv.VariablesReference, dv.NamedVariables, dv.IndexedVariables
	return body, nil
}

// childExpr is the expression naming the child called name of a
// reference.
func (s *Server) childExpr(h varHandle, fe *frameEnv, name string) (string, error) {
	switch h.kind {
	case varArgs, varLocals:
		return name, nil
	case varRegisters:
		return "$" + name, nil
	}
	vars, err := s.children(h, fe, "", 0, 0, false)
	if err != nil {
		return "", err
	}
	for _, v := range vars {
		if v.Name == name {
			return v.EvaluateName, nil
		}
	}
	return "", errorf("%s has no member %q", h.expr, name)
}

func (s *Server) setExpression(r *request) (any, error) {
	var a godap.SetExpressionArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	fe, h, err := s.evalEnv(d, a.FrameId)
	if err != nil {
		return nil, err
	}
	hex := a.Format != nil && a.Format.Hex
	res, text, err := s.assign(d, fe, a.Expression, a.Value, hex)
	if err != nil {
		return nil, err
	}
	body := godap.SetExpressionResponseBody{Value: text, Type: fe.resultType(res)}
	dv := godap.Variable{}
	s.describeParts(&dv, fe, h, res.Type, a.Expression)
	body.VariablesReference, body.NamedVariables, body.IndexedVariables = dv.VariablesReference, dv.NamedVariables, dv.IndexedVariables
	return body, nil
}

// completions offers the names visible in the frame (and repl commands)
// that start with the word being typed.
func (s *Server) completions(r *request) (any, error) {
	var a godap.CompletionsArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	col := a.Column - 1 // 1-based, in UTF-16 units; ASCII is what expressions are
	if col < 0 || col > len(a.Text) {
		col = len(a.Text)
	}
	start := col
	for start > 0 && isIdentByte(a.Text[start-1]) {
		start--
	}
	prefix := a.Text[start:col]
	seen := map[string]bool{}
	var targets []godap.CompletionItem
	add := func(label, typ string) {
		if strings.HasPrefix(label, prefix) && !seen[label] {
			seen[label] = true
			targets = append(targets, godap.CompletionItem{Label: label, Type: godap.CompletionItemType(typ), Start: start + 1, Length: len(prefix)})
		}
	}
	fe, _, err := s.evalEnv(d, a.FrameId)
	if base, ok := memberBase(a.Text[:start]); ok {
		// After "expr." or "expr->": the members of expr's type.
		if err == nil {
			if res, err := expr.Eval(base, fe.env); err == nil {
				for _, m := range memberNames(res.Type, 0) {
					add(m, "field")
				}
			}
		}
	} else if err == nil {
		for _, v := range fe.args {
			add(v.Name, "variable")
		}
		for _, v := range fe.locals {
			add(v.Name, "variable")
		}
	}
	if start == 0 {
		for _, c := range replCommands {
			add(c, "keyword")
		}
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].Label < targets[j].Label })
	if targets == nil {
		targets = []godap.CompletionItem{}
	}
	return godap.CompletionsResponseBody{Targets: targets}, nil
}

// memberBase returns the expression before a trailing "." or "->" of text
// (what precedes the member being typed): the longest run of names, member
// accesses and balanced brackets and parentheses.
func memberBase(text string) (string, bool) {
	end := len(text)
	switch {
	case strings.HasSuffix(text, "->"):
		end -= 2
	case strings.HasSuffix(text, "."):
		end--
	default:
		return "", false
	}
	i, depth := end, 0
	for i > 0 {
		c := text[i-1]
		switch {
		case c == ']' || c == ')':
			depth++
		case c == '[' || c == '(':
			if depth == 0 {
				return strings.TrimSpace(text[i:end]), i < end
			}
			depth--
		case depth > 0 || isIdentByte(c) || c == '.' || c == ':':
		case c == '>' && i >= 2 && text[i-2] == '-':
			i--
		default:
			return strings.TrimSpace(text[i:end]), i < end
		}
		i--
	}
	return strings.TrimSpace(text[:end]), end > 0
}

// memberNames lists the members of a struct, class or union type (or of
// the one a pointer points to), those of its base classes and anonymous
// members included.
func memberNames(t *variables.Type, depth int) []string {
	st := t.Strip()
	if st != nil && st.Kind == variables.KindPointer {
		st = st.Elem.Strip()
	}
	if st == nil || !st.IsComposite() || depth > 8 {
		return nil
	}
	var out []string
	for _, f := range st.Fields {
		switch {
		case f.Base || f.Name == "":
			out = append(out, memberNames(f.Type, depth+1)...)
		case f.Artificial:
		default:
			out = append(out, f.Name)
		}
	}
	return out
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

var _ = fmt.Sprintf
