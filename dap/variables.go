package dap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/variables"
)

// Values: a variable or an expression is shown as gdb prints it (integers
// in decimal, structs as {a = 1, ...}); one with parts (a struct, an array,
// a pointer) gets a reference whose children are the expressions naming
// those parts, evaluated when the client expands it. Every child carries
// that expression as its evaluateName, so "add to watch" and setVariable
// work on it.

// maxChildren bounds one page of children.
const maxChildren = 10000

func (s *Server) variables(r *request) (any, error) {
	var a godap.VariablesArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	h, ok := s.handles.variable(a.VariablesReference)
	if !ok {
		return nil, errorf("no variables reference %d (references are valid while their thread is stopped)", a.VariablesReference)
	}
	hex := a.Format != nil && a.Format.Hex
	fe, err := s.handleEnv(d, h)
	if err != nil {
		return nil, err
	}
	var out []godap.Variable
	switch h.kind {
	case varArgs:
		out = s.listVars(h, fe, fe.args, hex)
	case varLocals:
		out = s.listVars(h, fe, fe.locals, hex)
	case varRegisters:
		out = s.registerVars(fe)
	case varChildren:
		out, err = s.children(h, fe, a.Filter, a.Start, a.Count, hex)
		if err != nil {
			return nil, err
		}
	}
	if out == nil {
		out = []godap.Variable{}
	}
	if h.kind != varChildren && (a.Start > 0 || a.Count > 0) {
		out = page(out, a.Start, a.Count)
	}
	return godap.VariablesResponseBody{Variables: out}, nil
}

func page[T any](s []T, start, count int) []T {
	if start >= len(s) {
		return s[:0]
	}
	s = s[max(start, 0):]
	if count > 0 && count < len(s) {
		s = s[:count]
	}
	return s
}

// handleEnv returns the environment a reference evaluates in.
func (s *Server) handleEnv(d *debuggee, h varHandle) (*frameEnv, error) {
	if h.frame == 0 {
		return d.globalEnv(), nil
	}
	ref, ok := s.handles.frame(h.frame)
	if !ok {
		return nil, errorf("the frame of this reference is gone")
	}
	return d.env(ref.thread, ref.index)
}

// listVars reads a frame's arguments or locals.
func (s *Server) listVars(h varHandle, fe *frameEnv, vars []*variables.Variable, hex bool) []godap.Variable {
	out := make([]godap.Variable, 0, len(vars))
	rf := newRequestFrame(fe.frame) // one read per stack page, not per variable
	fe = fe.through(rf)             // and so do the values' own reads (a slice's elements, a string's bytes)
	for _, v := range vars {
		val, err := fe.reader.Read(v, rf)
		dv := godap.Variable{Name: v.Name, Type: fe.typeName(v.Type), EvaluateName: v.Name}
		dv.Value = s.formatValue(fe, val, err, hex)
		if err == nil {
			s.describeParts(&dv, fe, h, v.Type, v.Name)
			vectorCount(&dv, v.Type, val.Bytes)
			containerParts(&dv, fe, val)
			if val.Place == variables.PlaceMemory {
				dv.MemoryReference = hexAddr(val.Address)
			}
		}
		out = append(out, dv)
	}
	return out
}

// describeParts gives a value with parts its children's reference.
func (s *Server) describeParts(dv *godap.Variable, fe *frameEnv, h varHandle, t *variables.Type, exprText string) {
	st := fe.complete(t)
	if st == nil {
		return
	}
	if st.Kind == variables.KindReference || st.Kind == variables.KindRValueReference {
		// A C++ reference expands as what it refers to (a const T&
		// argument shows T's members); expressions see through it.
		st = fe.complete(st.Elem)
		if st == nil {
			return
		}
	}
	switch {
	case isText(st):
		// A string is its text, as gdb's printers (display hint "string")
		// show it: no raw members under it (lldb-vscode 14 lists its
		// characters).
		return
	case st.Kind == variables.KindArray:
		if st.Count == 0 {
			return
		}
		if st.Count > 0 {
			dv.IndexedVariables = int(min(st.Count, 1<<31-1))
		}
	case st.IsComposite() && isVector(st):
		// Its elements, however many the value holds.
	case st.IsComposite() && st.Variants != nil:
		// A Rust enum: the fields of the variant the value holds.
		if !variantsHaveFields(st.Variants) {
			return
		}
	case st.IsComposite():
		if len(st.Fields) == 0 {
			return
		}
		dv.NamedVariables = len(st.Fields)
	case st.Kind == variables.KindPointer:
		if !derefable(fe.complete(st.Elem)) {
			return
		}
	default:
		return
	}
	dv.VariablesReference = s.handles.varRef(varHandle{frame: h.frame, thread: h.thread, kind: varChildren, expr: exprText})
}

// isText reports whether st (stripped) is a string class: libstdc++'s
// std::string and std::string_view, Rust's String and &str (found in the
// fifth real-program trial: yaml-cpp's `const std::string &value` expanded
// to _M_dataplus, _M_local_buf's 16 bytes and an allocator base whose
// expression did not parse).
func isText(st *variables.Type) bool {
	if st == nil || st.Kind != variables.KindStruct && st.Kind != variables.KindClass {
		return false
	}
	n := st.Name
	return strings.HasPrefix(n, "basic_string<char,") || strings.HasPrefix(n, "basic_string_view<char,") ||
		n == "String" || n == "alloc::string::String" || n == "&str" || n == "&mut str"
}

// summarized reports whether a pointer's target e, the value of text, is
// one a summary shows (a string, a vector, a library container): the
// pointer then expands to that one value, as gdb's print *p shows it, not
// to its raw members (a Rust closure's &String argument expanded to
// "vec = Vec(size=6)" and its bytes).
func summarized(fe *frameEnv, e *variables.Type, text string) bool {
	if isText(e) || isVector(e) || isRustVec(e) {
		return true
	}
	res, err := expr.Eval(text, fe.env)
	if err != nil || res.Value == nil {
		return false
	}
	_, ok := containerOf(fe, resultValue(res, res.Type, res.Value))
	return ok
}

// derefable reports whether a pointer's target e (stripped) is worth
// expanding.
func derefable(e *variables.Type) bool {
	if e == nil || e.Kind == variables.KindFunction || e.Kind == variables.KindVoid || e.Declaration {
		return false
	}
	return e.ByteSize() > 0
}

// children lists the parts of an expression's value.
func (s *Server) children(h varHandle, fe *frameEnv, filter string, start, count int, hex bool) ([]godap.Variable, error) {
	res, err := expr.Eval(h.expr, fe.env)
	if err != nil {
		return nil, err
	}
	t := res.Type.Strip()
	if t != nil && (t.Kind == variables.KindReference || t.Kind == variables.KindRValueReference) && t.Elem.Strip() != nil {
		t = t.Elem.Strip()
		if res.Value, err = derefBytes(fe, res, t); err != nil {
			return nil, err
		}
	}
	if h.view != nil {
		t = h.view
	}
	t = fe.complete(t)
	var names, exprs []string
	paren := "(" + h.expr + ")"
	switch {
	case t.Kind == variables.KindArray:
		n := int(min(max(t.Count, 0), 1<<31-1))
		if filter == "named" {
			return nil, nil
		}
		start = max(start, 0)
		if count <= 0 {
			count = n
		}
		count = min(count, maxChildren)
		for i := start; i < n && i < start+count; i++ {
			names = append(names, "["+strconv.Itoa(i+int(t.Lower))+"]")
			exprs = append(exprs, paren+"["+strconv.Itoa(i+int(t.Lower))+"]")
		}
	case t.IsComposite() && isVector(t):
		if filter == "named" {
			return nil, nil
		}
		names, exprs, _ = vectorChildren(paren, t, res.Value, start, count)
	case t.IsComposite() && isRustVec(t) && rustVecElementsShown(fe, paren, t, res.Value):
		if filter == "named" {
			return nil, nil
		}
		names, exprs, _ = rustVecChildren(fe, paren, t, res.Value, start, count)
	case t.IsComposite() && containerHasChildren(fe, resultValue(res, t, res.Value)):
		if filter == "named" && containerIndexed(fe, resultValue(res, t, res.Value)) {
			return nil, nil
		}
		names, exprs, _ = containerChildren(fe, resultValue(res, t, res.Value), start, count)
	case t.IsComposite() && t.Variants != nil:
		if v := t.Variants.Active(res.Value); v != nil {
			if vt := v.Field.Type.Strip(); vt != nil && vt.IsComposite() {
				s.fieldChildren(h, vt, paren+"."+v.Field.Name+".", &names, &exprs)
			}
		}
	case t.IsComposite():
		s.fieldChildren(h, t, paren+".", &names, &exprs)
	case t.Kind == variables.KindPointer:
		if e := fe.complete(t.Elem); e != nil && e.IsComposite() && e.Variants == nil && !summarized(fe, e, "*"+paren) {
			s.fieldChildren(h, e, paren+"->", &names, &exprs)
		} else {
			names = append(names, "*"+h.expr)
			exprs = append(exprs, "*"+paren)
		}
	}
	out := make([]godap.Variable, 0, len(names))
	for i, n := range names {
		if exprs[i] == "" {
			continue
		}
		out = append(out, s.evalVariable(h, fe, n, exprs[i], hex))
	}
	return out, nil
}

// fieldChildren names a struct's members as expressions on base (which
// ends in "." or "->").
func (s *Server) fieldChildren(h varHandle, t *variables.Type, base string, names, exprs *[]string) {
	obj := strings.TrimSuffix(strings.TrimSuffix(base, "."), "->")
	for _, f := range t.Fields {
		switch {
		case f.Base:
			bt := f.Type.String()
			name := bt
			if n := f.Type.Strip(); n != nil && n.Name != "" {
				name = n.Name
			}
			if strings.ContainsAny(bt, "<>") && f.Type.Offset != 0 {
				// A template instance's name does not parse as a cast's
				// type (std::string's allocator<char> base showed a
				// syntax error): its DIE names it, as containers'
				// elements are named.
				bt = "${t:0x" + strconv.FormatUint(f.Type.Offset, 16) + "}"
			}
			*names = append(*names, name)
			if strings.HasSuffix(base, "->") {
				*exprs = append(*exprs, "*("+bt+"*)"+obj)
			} else {
				*exprs = append(*exprs, "*("+bt+"*)&"+obj)
			}
		case f.Name == "":
			// An anonymous struct or union: its members are named on the
			// container, so list them where it is.
			if ft := f.Type.Strip(); ft != nil && ft.IsComposite() {
				s.fieldChildren(h, ft, base, names, exprs)
			}
		case f.Artificial:
		default:
			*names = append(*names, f.Name)
			*exprs = append(*exprs, base+f.Name)
		}
	}
}

// evalVariable evaluates one child expression into a DAP variable.
func (s *Server) evalVariable(h varHandle, fe *frameEnv, name, text string, hex bool) godap.Variable {
	dv := godap.Variable{Name: name, EvaluateName: text}
	res, err := expr.Eval(text, fe.env)
	if err != nil {
		dv.Value = "<" + userMessage(err) + ">"
		return dv
	}
	dv.Type = fe.resultType(res)
	dv.Value = s.formatResult(fe, res, hex)
	if res.Value != nil || res.HasAddress {
		s.describeParts(&dv, fe, h, res.Type, text)
		resultParts(&dv, fe, res)
	}
	if res.HasAddress {
		dv.MemoryReference = hexAddr(res.Address)
	}
	return dv
}

// complete strips t and, where it only declares a struct, class, union or
// enum (lbaselib.c sees lua_State only as "struct lua_State;"), returns
// the definition another unit of the frame's module gives, as gdb and lldb
// do, so an opaque pointer expands to its members.
func (fe *frameEnv) complete(t *variables.Type) *variables.Type {
	st := t.Strip()
	if st == nil || !st.Declaration || fe == nil || fe.reader == nil {
		return st
	}
	return fe.reader.Complete(st).Strip()
}

// typeName is a value's type as gdb's whatis spells it (C++ names
// qualified: tinyxml2::XMLDocument * const).
func (fe *frameEnv) typeName(t *variables.Type) string {
	if t == nil || fe == nil || fe.reader == nil {
		return typeName(t)
	}
	return fe.reader.TypeString(t)
}

func typeName(t *variables.Type) string {
	if t == nil {
		return "void"
	}
	return t.String()
}

// formatResult prints an evaluated expression.
func (s *Server) formatResult(fe *frameEnv, res *expr.Result, hex bool) string {
	v := variables.Value{Type: res.Type, Bytes: res.Value, Address: res.Address}
	if res.HasAddress {
		v.Place = variables.PlaceMemory
	} else {
		v.Place = variables.PlaceComputed
	}
	var err error
	if res.Value == nil && res.LoadErr != nil {
		err = res.LoadErr
	}
	if st := res.Type.Strip(); st != nil && st.Kind == variables.KindFunction && res.HasAddress {
		// A function's value is its code: gdb prints
		// "{int (int)} 0x401136 <add>" (a function has no size to read:
		// it printed "<error reading variable: ... size of int (void) is
		// unknown>", found on Rust's std::env::args).
		out := "{" + fe.typeName(res.Type) + "} 0x" + strconv.FormatUint(res.Address, 16)
		if sym := s.symbolizer(fe); sym != nil {
			if name := sym(res.Address); name != "" {
				out += " <" + name + ">"
			}
		}
		return out
	}
	if rv, ok := refValue(res); ok {
		if hex && res.Value != nil {
			if t := res.Type.Strip(); t != nil && t.IsInteger() {
				return fmt.Sprintf("@0x%x: %s", res.Address, s.formatValue(fe, v, nil, true))
			}
		}
		return s.formatValue(fe, rv, nil, hex)
	}
	return s.formatValue(fe, v, err, hex)
}

// formatReferent prints an evaluated expression as its value, a reference
// as its referent (a log point's {r}: 5, as a printf of it).
func (s *Server) formatReferent(fe *frameEnv, res *expr.Result, hex bool) string {
	cp := *res
	cp.Ref = nil
	return s.formatResult(fe, &cp, hex)
}

// formatValue prints a value as gdb does, integers in hex when asked.
func (s *Server) formatValue(fe *frameEnv, v variables.Value, err error, hex bool) string {
	if err == nil && hex && v.Bytes != nil {
		if t := v.Type.Strip(); t != nil && (t.IsInteger() || t.Kind == variables.KindEnum) {
			if u, err := v.Uint(); err == nil {
				return fmt.Sprintf("0x%x", u)
			}
		}
	}
	if err == nil {
		if text, ok := summary(fe, v); ok {
			return text
		}
		if text, ok := referentSummary(fe, v); ok {
			return text
		}
	}
	if fe.reader == nil {
		if err != nil {
			return "<" + variables.ErrorMessage(err) + ">"
		}
		if t := v.Type.Strip(); t != nil && t.Kind == variables.KindPointer && len(v.Bytes) == 8 {
			// A pointer read where no debug information is (a library's
			// frame): its address, and the function it points into.
			p := binary.LittleEndian.Uint64(v.Bytes)
			if sym := s.symbolizer(fe); sym != nil && p != 0 {
				if name := sym(p); name != "" {
					return fmt.Sprintf("0x%x <%s>", p, name)
				}
			}
			return fmt.Sprintf("0x%x", p)
		}
		if t := v.Type.Strip(); t != nil && t.IsInteger() && len(v.Bytes) <= 8 {
			var w [8]byte
			copy(w[:], v.Bytes)
			if t.IsSigned() {
				n, _ := v.Int()
				return strconv.FormatInt(n, 10)
			}
			return strconv.FormatUint(binary.LittleEndian.Uint64(w[:]), 10)
		}
		return fmt.Sprintf("%x", v.Bytes)
	}
	return fe.reader.Format(v, err, fe.memory(), variables.FormatOptions{Symbol: s.symbolizer(fe), Pretty: true, UTF8: true})
}

// symbolizer names the function a code pointer points into, as gdb's
// print does ("0x401136 <main+4>"); nil when no process is known.
func (s *Server) symbolizer(fe *frameEnv) func(uint64) string {
	d, err := s.current()
	if err != nil || d.sess == nil {
		return nil
	}
	return func(addr uint64) string {
		_, frames, err := d.sess.Symbolize(d.proc, addr, false)
		if err != nil || len(frames) == 0 || frames[len(frames)-1].Function == "" {
			return ""
		}
		f := frames[len(frames)-1]
		name := cxxSymbolName(d, f.Function, addr)
		if f.Start != 0 && addr > f.Start {
			return fmt.Sprintf("%s+%d", name, addr-f.Start)
		}
		return name
	}
}

// registerVars lists a frame's general registers (caller frames: those the
// unwinder recovered).
func (s *Server) registerVars(fe *frameEnv) []godap.Variable {
	d, _ := s.current()
	if d == nil {
		return nil
	}
	var out []godap.Variable
	for _, reg := range d.tgt.Arch().Registers {
		if reg.Group != "general" || reg.DWARF < 0 || reg.Size > 8 {
			continue
		}
		b, err := fe.frame.Register(reg.DWARF)
		if err != nil {
			continue
		}
		var w [8]byte
		copy(w[:], b)
		out = append(out, godap.Variable{Name: reg.Name, Value: fmt.Sprintf("0x%0*x", reg.Size*2, binary.LittleEndian.Uint64(w[:])),
			EvaluateName: "$" + reg.Name})
	}
	return out
}

var errReadOnly = errors.New("a core file is read-only")

// derefBytes reads the object a reference's value points to (for its
// children: a std::vector's length, a Rust enum's variant).
func derefBytes(fe *frameEnv, res *expr.Result, t *variables.Type) ([]byte, error) {
	if len(res.Value) < 8 || fe.env == nil || fe.env.Frame == nil {
		return nil, errorf("the reference's value is not known")
	}
	size := t.ByteSize()
	if size <= 0 || size > 1<<20 {
		return nil, nil
	}
	buf := make([]byte, size)
	addr := binary.LittleEndian.Uint64(res.Value)
	if n, _ := fe.env.Frame.ReadMemory(buf, addr); int64(n) < size {
		return nil, errorf("cannot access memory at address 0x%x", addr)
	}
	return buf, nil
}

// referentSummary prints a C++ reference to a string, a vector or an enum
// as gdb does, "@0x7ffc...: std::vector of length 3".
func referentSummary(fe *frameEnv, v variables.Value) (string, bool) {
	t := v.Type.Strip()
	if t == nil || (t.Kind != variables.KindReference && t.Kind != variables.KindRValueReference) || len(v.Bytes) < 8 {
		return "", false
	}
	rt := t.Elem.Strip()
	if rt == nil || !rt.IsComposite() {
		return "", false
	}
	b, err := derefBytes(fe, &expr.Result{Value: v.Bytes}, rt)
	if err != nil || b == nil {
		return "", false
	}
	addr := binary.LittleEndian.Uint64(v.Bytes)
	rv := variables.Value{Type: rt, Bytes: b, Address: addr, Place: variables.PlaceMemory}
	text, ok := summary(fe, rv)
	if !ok {
		return "", false
	}
	if t.Kind == variables.KindReference && gdbPrinted(fe, rv) {
		// libstdc++'s printers take an lvalue reference as its referent:
		// gdb prints label = "gamma" for a const std::string &, but
		// vals = @0x7ffe...: std::vector of length 3 for a vector &&.
		return text, true
	}
	return fmt.Sprintf("@0x%x: %s", addr, text), true
}

// gdbPrinted reports whether one of libstdc++'s printers, which gdb
// loads, prints v (a string, a vector, a container; not std::array).
func gdbPrinted(fe *frameEnv, v variables.Value) bool {
	t := v.Type.Strip()
	if isText(t) || isVector(t) {
		return true
	}
	c, ok := containerOf(fe, v)
	return ok && c.GDB
}

// refValue is a result reached through a C++ reference (a watch of r, of
// s.limit) as the reference itself, whose bytes are the referent's
// address: it prints as the variables view prints that reference, as
// gdb's print does ("@0x7ffe...: 5").
func refValue(res *expr.Result) (variables.Value, bool) {
	if res.Ref == nil || !res.HasAddress {
		return variables.Value{}, false
	}
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, res.Address)
	return variables.Value{Type: res.Ref, Bytes: b, Place: variables.PlaceComputed}, true
}

// resultType names an evaluated expression's type: a reference's own
// (int &, as gdb's whatis), else the value's.
func (fe *frameEnv) resultType(res *expr.Result) string {
	if res.Ref != nil && res.HasAddress {
		return fe.typeName(res.Ref)
	}
	return fe.typeName(res.Type)
}
