package expr

import (
	"errors"
	"strings"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/variables"
)

// Env is what names in an expression mean: a frame (memory and registers),
// the DWARF of its module and the scopes active at its pc.
type Env struct {
	// Frame reads (and, when it implements variables.Writer, writes) the
	// target; nil evaluates constant expressions only.
	Frame variables.Frame
	// Reader is the DWARF of the frame's module (nil: none).
	Reader *variables.Reader
	// Scopes are the scopes visible at the frame's pc, innermost first
	// (variables.FrameScopes picks those of an inline frame).
	Scopes []*variables.Scope
	// Function, when set, resolves function names to their run-time entry
	// address (for comparisons with function pointers).
	Function func(name string) (uint64, bool)
	// FunctionType, when set, gives the type of the function at a run-time
	// address Function returned (its parameters, as gdb prints a
	// function's value); nil from it: int (void).
	FunctionType func(addr uint64) *variables.Type
	// Global, when set, resolves names found nowhere else (variables of other
	// modules): the variable, its module's Reader and load bias.
	Global func(name string) (*variables.Variable, *variables.Reader, uint64, error)
	// Arch names the registers ($rax); nil means x86-64.
	Arch *arch.Arch
	// Symbol, when set, resolves ${ID} references to what the ID names.
	Symbol func(id string) (SymbolRef, error)
	// Intrinsic, when set, gives meaning to the debugger's own $names
	// ($thread, $printf(...)); it returns nil for a name it does not know,
	// which then names a register.
	Intrinsic func(name string) *Intrinsic
}

// SymbolRef is what a ${ID} reference names: exactly one of a type, a
// member (a field of a struct, class or union type), a register (DWARF
// number, Register >= 0 with IsRegister) or a variable (with the Reader and
// frame to read it in).
type SymbolRef struct {
	Type       *variables.Type
	Field      *variables.Field
	Register   int
	IsRegister bool
	Variable   *variables.Variable
	Reader     *variables.Reader
	Frame      variables.Frame
}

// Result is an evaluated expression.
type Result struct {
	Type *variables.Type
	// Value holds the bytes (little-endian; for a bit field, the field's
	// value zero- or sign-extended to its type's size); nil when they
	// could not be loaded (LoadErr says why) or the type is void.
	Value   []byte
	LoadErr error
	// Address is set for values in memory (HasAddress), Register for values
	// in a register (InRegister, DWARF numbering).
	Address    uint64
	HasAddress bool
	Register   int
	InRegister bool
	// BitOffset and BitSize place a bit field in the storage at Address.
	BitOffset, BitSize int64
	// Variable is the variable the expression names, when it is just one.
	Variable *variables.Variable
	// Ref is set when the expression names a C++ reference (a variable or
	// member of type int &, const std::string &, T &&): its type, while
	// Type, Value and Address are the referent's (what every operator
	// sees). gdb's print shows such a value as "(int &) @0x7ffe...: 5".
	Ref *variables.Type
}

// CanAssign reports whether the result is an lvalue assignment can change.
func (r *Result) CanAssign() bool { return r.HasAddress || r.InRegister }

// Int returns an integer, enum, pointer or bool result (sign-extended for
// signed types).
func (r *Result) Int() (int64, error) {
	v := variables.Value{Type: r.Type, Bytes: r.Value}
	return v.Int()
}

// Float returns a floating result.
func (r *Result) Float() (float64, error) {
	v := variables.Value{Type: r.Type, Bytes: r.Value}
	return v.Float()
}

// IsType returns the parser callback that asks env's DWARF whether a name is
// a typedef (or, in C++, a class name).
func (env *Env) IsType(name string) bool {
	if env == nil || env.Reader == nil && !strings.HasPrefix(name, "${") {
		return false
	}
	if strings.HasPrefix(name, "${") {
		if env.Symbol == nil {
			return false
		}
		ref, err := env.Symbol(strings.TrimSuffix(strings.TrimPrefix(name, "${"), "}"))
		return err == nil && ref.Type != nil
	}
	// A variable of that name shadows the type.
	for _, s := range env.Scopes {
		for _, v := range s.Vars {
			if v.Name == name {
				return false
			}
		}
	}
	if _, err := env.Reader.Globals(name); err == nil {
		return false
	}
	ts, err := env.Reader.TypesByName(name)
	if err != nil {
		return false
	}
	for _, t := range ts {
		switch t.Kind {
		case variables.KindTypedef, variables.KindClass, variables.KindStruct, variables.KindUnion, variables.KindEnum:
			// C++ names classes, unions and enums without a tag keyword;
			// in C a tag alone is not a type, but "(point)x" is meant as a
			// cast there too when no variable has the name.
			return true
		}
	}
	return false
}

// Eval parses and evaluates src in env.
func Eval(src string, env *Env) (*Result, error) {
	n, err := Parse(src, env.IsType)
	if err != nil {
		return nil, err
	}
	return Evaluate(n, env)
}

// Evaluate evaluates a parsed expression.
func Evaluate(n Node, env *Env) (res *Result, err error) {
	e := &evaluator{env: env}
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, errorf(ErrOther, n.Pos(), "internal error: %v", p)
		}
	}()
	v, err := e.eval(n, 0)
	if err != nil {
		return nil, err
	}
	return e.result(v, n.Pos()), nil
}

// Condition evaluates src as a breakpoint condition: true when the value is
// non-zero.
func Condition(src string, env *Env) (bool, error) {
	n, err := Parse(src, env.IsType)
	if err != nil {
		return false, err
	}
	e := &evaluator{env: env}
	v, err := e.eval(n, 0)
	if err != nil {
		return false, err
	}
	return e.truth(v, n.Pos())
}

func (e *evaluator) result(v *value, pos int) *Result {
	r := &Result{Type: v.t, Variable: v.sym, Ref: v.ref}
	switch v.where {
	case inMemory:
		r.Address, r.HasAddress = v.addr, true
	case inRegister:
		r.Register, r.InRegister = v.reg, true
	}
	r.BitOffset, r.BitSize = v.bitOff, v.bitSize
	if v.t.Strip() == nil || v.t.Strip().Kind == variables.KindVoid {
		return r
	}
	if err := e.load(v, pos); err != nil {
		r.LoadErr = err
		return r
	}
	if v.isBitField() {
		n, err := e.bits(v, pos)
		if err != nil {
			r.LoadErr = err
			return r
		}
		r.Value = intValue(v.t, n).bytes
		return r
	}
	r.Value = v.bytes
	return r
}

type evaluator struct {
	env      *Env
	typeOnly int // inside sizeof's operand: calls must have no effect
}

func (e *evaluator) arch() *arch.Arch {
	if e.env.Arch != nil {
		return e.env.Arch
	}
	return arch.AMD64
}

func (e *evaluator) eval(n Node, depth int) (*value, error) {
	if depth > MaxDepth*2 {
		return nil, errorf(ErrSyntax, n.Pos(), "expression too deep")
	}
	d := depth + 1
	switch n := n.(type) {
	case *IntLit:
		return intLiteral(n), nil
	case *FloatLit:
		switch n.Suffix {
		case "f":
			return floatValue(typeFloat, n.Value), nil
		case "l":
			return floatValue(typeLDouble, n.Value), nil
		}
		return floatValue(typeDouble, n.Value), nil
	case *StringLit:
		b := append(append([]byte(nil), n.Value...), 0)
		return &value{t: ArrayOf(typeChar, int64(len(b))), bytes: b}, nil
	case *Ident:
		return e.ident(n)
	case *Register:
		return e.dollar(n)
	case *SymRef:
		return e.symRef(n)
	case *Unary:
		return e.unary(n, d)
	case *Binary:
		return e.binary(n, d)
	case *Cond:
		c, err := e.eval(n.C, d)
		if err != nil {
			return nil, err
		}
		ok, err := e.truth(c, n.C.Pos())
		if err != nil {
			return nil, err
		}
		x, err := e.eval(map[bool]Node{true: n.X, false: n.Y}[ok], d)
		if err != nil {
			return nil, err
		}
		if x.ref != nil {
			// c ? r : y is the referent's type (int), not a reference.
			cp := *x
			cp.ref = nil
			x = &cp
		}
		return e.decay(x, n.P)
	case *Member:
		return e.member(n, d)
	case *Index:
		return e.index(n, d)
	case *Cast:
		t, err := e.typeOf(n.T)
		if err != nil {
			return nil, err
		}
		x, err := e.eval(n.X, d)
		if err != nil {
			return nil, err
		}
		return e.convert(x, t, n.P, true)
	case *SizeofType:
		t, err := e.typeOf(n.T)
		if err != nil {
			return nil, err
		}
		return e.sizeof(t, n.P)
	case *SizeofExpr:
		// sizeof does not evaluate its operand, except to find a VLA's length:
		// names are looked up (which locates, never loads).
		e.typeOnly++
		x, err := e.eval(n.X, d)
		e.typeOnly--
		if err != nil {
			return nil, err
		}
		return e.sizeof(x.t, n.P)
	case *Call:
		return e.call(n, d)
	case *IncDec:
		return nil, errorf(ErrUnsupported, n.P, "%s is not evaluated (it has a side effect); use assignment", n.Op)
	}
	return nil, errorf(ErrSyntax, n.Pos(), "unknown expression node")
}

func intLiteral(n *IntLit) *value {
	if n.Char {
		return intValue(typeChar, n.Value)
	}
	switch n.Suffix {
	case "bool":
		return intValue(typeBool, n.Value)
	case "null":
		return intValue(PointerTo(typeVoid), 0)
	}
	unsigned := strings.Contains(n.Suffix, "u")
	long := strings.Contains(n.Suffix, "l")
	v := n.Value
	// C's rule: the first type of the list that can represent the value;
	// unsigned types join the list for hexadecimal, octal and binary
	// constants and for the u suffix.
	fits := func(t *variables.Type) bool {
		switch {
		case t.ByteSize() == 4 && t.IsSigned():
			return v <= 0x7fffffff
		case t.ByteSize() == 4:
			return v <= 0xffffffff
		case t.IsSigned():
			return v <= 0x7fffffffffffffff
		}
		return true
	}
	var list []*variables.Type
	switch {
	case unsigned && long:
		list = []*variables.Type{typeULong}
	case unsigned:
		list = []*variables.Type{typeUInt, typeULong}
	case long && n.Decimal:
		list = []*variables.Type{typeLong, typeULong}
	case long:
		list = []*variables.Type{typeLong, typeULong}
	case n.Decimal:
		list = []*variables.Type{typeInt, typeLong, typeULong}
	default:
		list = []*variables.Type{typeInt, typeUInt, typeLong, typeULong}
	}
	for _, t := range list {
		if fits(t) {
			return intValue(t, v)
		}
	}
	return intValue(typeULong, v)
}

func (e *evaluator) sizeof(t *variables.Type, pos int) (*value, error) {
	s := t.ByteSize()
	if st := t.Strip(); st != nil && st.Kind == variables.KindFunction {
		s = 1
	}
	if s < 0 {
		return nil, errorf(ErrType, pos, "sizeof of incomplete type %s", t)
	}
	return intValue(typeULong, uint64(s)), nil
}

// ident resolves a name: locals and parameters, innermost scope first, then
// enumerators, then globals of the frame's module and of other modules.
func (e *evaluator) ident(n *Ident) (*value, error) {
	env := e.env
	var decl *variables.Variable
	var this *variables.Variable
	for _, s := range env.Scopes {
		for i := len(s.Vars) - 1; i >= 0; i-- {
			if v := s.Vars[i]; v.Name == n.Name {
				return e.variable(v, env.Reader, env.Frame, n.P)
			} else if v.Name == "this" && this == nil {
				this = v
			}
		}
	}
	if this != nil && n.Name != "this" && e.hasMember(this, n.Name) {
		// In a member function, a member's name means this->name (C++
		// looks in the class before the enclosing namespaces).
		return e.member(&Member{P: n.P, X: &Ident{P: n.P, Name: "this"}, Name: n.Name, Arrow: true}, 1)
	}
	if env.Reader != nil {
		if t, val, err := env.Reader.Enumerator(n.Name); err == nil {
			return intValue(t, uint64(val)), nil
		}
		if vs, err := env.Reader.Globals(n.Name); err == nil {
			// A declaration without a location (extern int x; defined in
			// a library) is used only when no module defines the name.
			if vs[0].Loc.Kind != variables.LocNone || env.Global == nil {
				return e.variable(vs[0], env.Reader, env.Frame, n.P)
			}
			decl = vs[0]
		}
	}
	if env.Global != nil {
		if v, r, bias, err := env.Global(n.Name); err == nil && v != nil {
			var f variables.Frame
			if env.Frame != nil {
				f = biasFrame{env.Frame, bias}
			}
			return e.variable(v, r, f, n.P)
		}
	}
	if decl != nil {
		return e.variable(decl, env.Reader, env.Frame, n.P)
	}
	if env.Function != nil {
		if addr, ok := env.Function(n.Name); ok {
			t := &variables.Type{Kind: variables.KindFunction, Name: n.Name, Size: -1, Count: -1, Elem: typeInt}
			if env.FunctionType != nil {
				if ft := env.FunctionType(addr); ft != nil {
					t = ft
				}
			}
			return &value{t: t, where: inMemory, addr: addr}, nil
		}
	}
	return nil, errorf(ErrNotFound, n.P, "no symbol %q in current context", n.Name)
}

// hasMember reports whether the class this points to (or one of its bases)
// has a member named name.
func (e *evaluator) hasMember(this *variables.Variable, name string) bool {
	t := this.Type.Strip()
	if t == nil || !t.IsPointer() || t.Elem == nil {
		return false
	}
	c := t.Elem
	if e.env.Reader != nil && c.Strip() != nil && c.Strip().Declaration {
		c = e.env.Reader.Complete(c)
	}
	_, _, ok := findMember(c, name, 0, nil, e.complete, 0)
	return ok
}

// biasFrame is a frame seen from another module (its globals' addresses).
type biasFrame struct {
	variables.Frame
	bias uint64
}

func (b biasFrame) Bias() uint64 { return b.bias }

// TLSAddress passes thread-local storage lookups of the other module's
// variables (r names the module) to the frame.
func (b biasFrame) TLSAddress(r *variables.Reader, offset uint64) (uint64, error) {
	if tf, ok := b.Frame.(variables.TLSFrame); ok {
		return tf.TLSAddress(r, offset)
	}
	return 0, errors.New("no thread-local storage in this frame")
}

func (e *evaluator) variable(v *variables.Variable, r *variables.Reader, f variables.Frame, pos int) (*value, error) {
	if v.Type == nil {
		return nil, errorf(ErrType, pos, "%s has no type", v.Name)
	}
	if r == nil {
		return nil, errorf(ErrNotFound, pos, "no debug information for %s", v.Name)
	}
	if f == nil {
		return nil, errorf(ErrMemory, pos, "%s: no frame to read it in", v.Name)
	}
	loc, err := r.Locate(v, f)
	if err != nil {
		return nil, wrap(pos, v.Name, err)
	}
	t := v.Type
	if rt, err := r.ResolveType(t, v.Scope, f); err == nil {
		t = rt
	}
	out := &value{t: t, sym: v}
	switch loc.Place {
	case variables.PlaceMemory:
		out.where, out.addr = inMemory, loc.Address
	case variables.PlaceRegister:
		out.where, out.reg = inRegister, loc.Register
		if err := r.Load(&loc, f); err != nil {
			return nil, wrap(pos, v.Name, err)
		}
		out.bytes = loc.Bytes
	case variables.PlaceImplicitPointer:
		out.implicit = &implicitTarget{die: loc.Target, offset: loc.TargetOffset, reader: r, frame: f, scope: v.Scope}
	default:
		out.bytes, out.unavail = loc.Bytes, loc.Unavailable
	}
	return e.autoDeref(out, pos)
}

// autoDeref turns a C++ reference into the object it refers to.
func (e *evaluator) autoDeref(v *value, pos int) (*value, error) {
	s := v.t.Strip()
	if s == nil || s.Kind != variables.KindReference && s.Kind != variables.KindRValueReference {
		return v, nil
	}
	if err := e.load(v, pos); err != nil {
		return nil, err
	}
	addr, err := e.bits(v, pos)
	if err != nil {
		return nil, err
	}
	elem := s.Elem
	if es := elem.Strip(); es != nil && es.Declaration && e.env.Reader != nil {
		elem = e.env.Reader.Complete(elem)
	}
	return &value{t: elem, where: inMemory, addr: addr, sym: v.sym, ref: v.t}, nil
}

// registerAliases map gdb's convenience names and 32/16/8-bit views to the
// 64-bit register and the view's size.
var registerAliases = map[string]struct {
	name string
	size int
}{
	"pc": {"rip", 8}, "sp": {"rsp", 8}, "fp": {"rbp", 8},
	"eax": {"rax", 4}, "ebx": {"rbx", 4}, "ecx": {"rcx", 4}, "edx": {"rdx", 4},
	"esi": {"rsi", 4}, "edi": {"rdi", 4}, "ebp": {"rbp", 4}, "esp": {"rsp", 4},
	"ax": {"rax", 2}, "bx": {"rbx", 2}, "cx": {"rcx", 2}, "dx": {"rdx", 2},
	"al": {"rax", 1}, "bl": {"rbx", 1}, "cl": {"rcx", 1}, "dl": {"rdx", 1},
	"r8d": {"r8", 4}, "r9d": {"r9", 4}, "r10d": {"r10", 4}, "r11d": {"r11", 4},
	"r12d": {"r12", 4}, "r13d": {"r13", 4}, "r14d": {"r14", 4}, "r15d": {"r15", 4},
}

func (e *evaluator) register(n *Register) (*value, error) {
	name := strings.ToLower(n.Name)
	size := 0
	if a, ok := registerAliases[name]; ok {
		name, size = a.name, a.size
	}
	reg := e.arch().ByName(name)
	if reg == nil || reg.DWARF < 0 {
		return nil, errorf(ErrNotFound, n.P, "no register $%s", n.Name)
	}
	if size == 0 {
		size = reg.Size
	}
	if e.env.Frame == nil {
		return nil, errorf(ErrOptimizedOut, n.P, "no frame to read $%s in", n.Name)
	}
	b, err := e.env.Frame.Register(reg.DWARF)
	if err != nil {
		return nil, &Error{Kind: ErrOptimizedOut, Pos: n.P, Msg: "$" + n.Name + " is not available in this frame", Err: err}
	}
	var t *variables.Type
	switch {
	case name == "rip" && size == 8 || name == "rsp" && size == 8 || name == "rbp" && size == 8:
		t = PointerTo(typeVoid)
	case size == 8:
		t = typeLong
	case size == 4:
		t = typeInt
	case size == 2:
		t = typeShort
	case size == 1:
		t = typeChar
	default:
		t = ArrayOf(typeUChar, int64(size))
	}
	if len(b) < size {
		return nil, errorf(ErrOther, n.P, "register $%s has %d bytes", n.Name, len(b))
	}
	return &value{t: t, where: inRegister, reg: reg.DWARF, bytes: append([]byte(nil), b[:size]...)}, nil
}

// symbol resolves a ${ID} reference.
func (e *evaluator) symbol(pos int, id string) (SymbolRef, error) {
	if e.env.Symbol == nil {
		return SymbolRef{}, errorf(ErrNotFound, pos, "no symbol ${%s} (no resolver)", id)
	}
	ref, err := e.env.Symbol(id)
	if err != nil {
		return SymbolRef{}, &Error{Kind: ErrNotFound, Pos: pos, Msg: "no symbol ${" + id + "}", Err: err}
	}
	return ref, nil
}

func (e *evaluator) symRef(n *SymRef) (*value, error) {
	ref, err := e.symbol(n.P, n.ID)
	if err != nil {
		return nil, err
	}
	switch {
	case ref.Variable != nil:
		f := ref.Frame
		if f == nil {
			f = e.env.Frame
		}
		r := ref.Reader
		if r == nil {
			r = e.env.Reader
		}
		return e.variable(ref.Variable, r, f, n.P)
	case ref.IsRegister:
		if e.env.Frame == nil {
			return nil, errorf(ErrOptimizedOut, n.P, "no frame to read a register in")
		}
		b, err := e.env.Frame.Register(ref.Register)
		if err != nil {
			return nil, &Error{Kind: ErrOptimizedOut, Pos: n.P, Msg: "register not available in this frame", Err: err}
		}
		t := typeLong
		if len(b) != 8 {
			t = ArrayOf(typeUChar, int64(len(b)))
		}
		return &value{t: t, where: inRegister, reg: ref.Register, bytes: append([]byte(nil), b...)}, nil
	}
	return nil, errorf(ErrType, n.P, "${%s} is not a value", n.ID)
}

// typeOf resolves a written type name.
func (e *evaluator) typeOf(tn *TypeName) (*variables.Type, error) {
	var t *variables.Type
	if tn.ByID != "" {
		ref, err := e.symbol(tn.P, tn.ByID)
		if err != nil {
			return nil, err
		}
		if ref.Type == nil {
			return nil, errorf(ErrType, tn.P, "${%s} is not a type", tn.ByID)
		}
		t = ref.Type
	} else if tn.Name == "" {
		t = keywordType(tn.Words)
		if t == nil {
			return nil, errorf(ErrType, tn.P, "unknown type %q", strings.Join(tn.Words, " "))
		}
	} else {
		if e.env.Reader == nil {
			return nil, errorf(ErrNotFound, tn.P, "no type named %q (no debug information)", tn.Name)
		}
		ts, err := e.env.Reader.TypesByName(tn.Name)
		if err != nil {
			return nil, errorf(ErrNotFound, tn.P, "no type named %q", tn.Name)
		}
		for _, c := range ts {
			ok := false
			switch tn.Tag {
			case "struct", "class":
				ok = c.Kind == variables.KindStruct || c.Kind == variables.KindClass
			case "union":
				ok = c.Kind == variables.KindUnion
			case "enum":
				ok = c.Kind == variables.KindEnum
			default:
				ok = c.Kind == variables.KindTypedef || c.Kind == variables.KindBase ||
					c.Kind == variables.KindClass || c.Kind == variables.KindStruct ||
					c.Kind == variables.KindUnion || c.Kind == variables.KindEnum
			}
			if ok {
				t = c
				break
			}
		}
		if t == nil {
			return nil, errorf(ErrNotFound, tn.P, "no type named %q", strings.TrimSpace(tn.Tag+" "+tn.Name))
		}
	}
	for i := 0; i < tn.Ptrs; i++ {
		t = PointerTo(t)
	}
	if tn.Ref {
		t = &variables.Type{Kind: variables.KindReference, Size: 8, Elem: t, Count: -1}
	}
	for i := len(tn.Dims) - 1; i >= 0; i-- {
		t = ArrayOf(t, int64(tn.Dims[i]))
	}
	return t, nil
}
