package expr

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/sondedbg/sonde/dwarfexpr"
	"github.com/sondedbg/sonde/variables"
)

// decay converts arrays to pointers to their first element and functions to
// function pointers (C's rvalue conversions); other values are unchanged.
func (e *evaluator) decay(v *value, pos int) (*value, error) {
	s := v.t.Strip()
	if s == nil {
		return v, nil
	}
	switch s.Kind {
	case variables.KindArray:
		if v.where != inMemory {
			return v, nil // an array that is not in memory (a string literal) stays an array
		}
		return intValue(PointerTo(s.Elem), v.addr), nil
	case variables.KindFunction:
		if v.where == inMemory {
			return intValue(PointerTo(v.t), v.addr), nil
		}
	}
	return v, nil
}

// truth tests a scalar for non-zero.
func (e *evaluator) truth(v *value, pos int) (bool, error) {
	v, err := e.decay(v, pos)
	if err != nil {
		return false, err
	}
	switch {
	case v.t.IsFloat():
		f, err := e.float(v, pos)
		return f != 0, err
	case v.t.IsInteger() || v.t.IsPointer():
		n, err := e.bits(v, pos)
		return n != 0, err
	}
	return false, errorf(ErrType, pos, "%s used where a scalar is required", v.t)
}

func (e *evaluator) unary(n *Unary, d int) (*value, error) {
	x, err := e.eval(n.X, d)
	if err != nil {
		return nil, err
	}
	switch n.Op {
	case "&":
		if x.isBitField() {
			return nil, errorf(ErrType, n.P, "cannot take the address of a bit field")
		}
		if x.where != inMemory {
			return nil, errorf(ErrType, n.P, "cannot take the address of a value that is not in memory")
		}
		return intValue(PointerTo(x.t), x.addr), nil
	case "*":
		x, err = e.decay(x, n.P)
		if err != nil {
			return nil, err
		}
		if !x.t.IsPointer() {
			if s := x.t.Strip(); s != nil && s.Kind == variables.KindFunction {
				return x, nil
			}
			p, ok, err := e.smartPointer(x, n.P)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, errorf(ErrType, n.P, "cannot dereference %s", x.t)
			}
			x = p
		}
		return e.deref(x, n.P)
	case "!":
		if e.lang() == variables.LangRust && x.t.IsInteger() && !isBool(x.t) {
			// Rust's ! on an integer is its bitwise complement (gdb's
			// Rust: !5 is -6).
			u, err := e.bits(x, n.P)
			if err != nil {
				return nil, err
			}
			return intValue(x.t.Strip(), ^u), nil
		}
		ok, err := e.truth(x, n.P)
		if err != nil {
			return nil, err
		}
		return e.boolValue(!ok), nil
	case "-", "+", "~":
		if x.t.IsFloat() && n.Op != "~" {
			f, err := e.float(x, n.P)
			if err != nil {
				return nil, err
			}
			if n.Op == "-" {
				f = -f
			}
			return floatValue(x.t.Strip(), f), nil
		}
		if !x.t.IsInteger() {
			return nil, errorf(ErrType, n.P, "wrong type argument to unary %s: %s", n.Op, x.t)
		}
		t := promote(x.t)
		u, err := e.bits(x, n.P)
		if err != nil {
			return nil, err
		}
		switch n.Op {
		case "-":
			u = -u
		case "~":
			u = ^u
		}
		return intValue(t, u), nil
	}
	return nil, errorf(ErrSyntax, n.P, "unknown operator %s", n.Op)
}

// deref follows a pointer value to the object it points to (not loaded).
func (e *evaluator) deref(p *value, pos int) (*value, error) {
	elem := p.t.Strip().Elem
	if s := elem.Strip(); s == nil || s.Kind == variables.KindVoid {
		return nil, errorf(ErrType, pos, "attempt to take contents of a non-pointer value (void *)")
	}
	if p.implicit != nil {
		return e.derefImplicit(p.implicit, elem, pos)
	}
	if s := elem.Strip(); s != nil && s.Declaration && e.env.Reader != nil {
		// *L where this unit only declares struct lua_State: the
		// definition another unit gives, as gdb prints it.
		elem = e.env.Reader.Complete(elem)
	}
	addr, err := e.bits(p, pos)
	if err != nil {
		return nil, err
	}
	v := &value{t: elem, where: inMemory, addr: addr}
	return e.autoDeref(v, pos)
}

func (e *evaluator) binary(n *Binary, d int) (*value, error) {
	switch n.Op {
	case ",":
		if _, err := e.eval(n.X, d); err != nil {
			return nil, err
		}
		return e.eval(n.Y, d)
	case "&&", "||":
		x, err := e.eval(n.X, d)
		if err != nil {
			return nil, err
		}
		a, err := e.truth(x, n.X.Pos())
		if err != nil {
			return nil, err
		}
		if a == (n.Op == "||") { // short circuit: y is not evaluated
			return e.boolValue(a), nil
		}
		y, err := e.eval(n.Y, d)
		if err != nil {
			return nil, err
		}
		b, err := e.truth(y, n.Y.Pos())
		if err != nil {
			return nil, err
		}
		return e.boolValue(b), nil
	}
	if assignOps[n.Op] {
		return e.assign(n, d)
	}
	x, err := e.eval(n.X, d)
	if err != nil {
		return nil, err
	}
	y, err := e.eval(n.Y, d)
	if err != nil {
		return nil, err
	}
	if v, ok, err := e.stdStringCompare(n, x, y, d); ok {
		return v, err
	}
	return e.arith(n.Op, x, y, n.P)
}

// arith applies a binary arithmetic, bitwise, shift or comparison operator.
func (e *evaluator) arith(op string, x, y *value, pos int) (*value, error) {
	var err error
	if x, err = e.decay(x, pos); err != nil {
		return nil, err
	}
	if y, err = e.decay(y, pos); err != nil {
		return nil, err
	}
	xp, yp := x.t.IsPointer(), y.t.IsPointer()
	if xp || yp {
		return e.pointerArith(op, x, y, pos)
	}
	if !isScalar(x.t) || !isScalar(y.t) {
		bad := x.t
		if isScalar(x.t) {
			bad = y.t
		}
		return nil, errorf(ErrType, pos, "invalid operand of type %s to binary %s", bad, op)
	}
	switch op {
	case "<<", ">>":
		if !x.t.IsInteger() || !y.t.IsInteger() {
			return nil, errorf(ErrType, pos, "shift of a non-integer")
		}
		t := promote(x.t)
		a, err := e.bits(x, pos)
		if err != nil {
			return nil, err
		}
		c, err := e.bits(y, pos)
		if err != nil {
			return nil, err
		}
		width := uint64(8 * t.ByteSize())
		if y.t.IsSigned() && int64(c) < 0 || c >= width {
			return nil, errorf(ErrType, pos, "shift count %d is out of range for %s", int64(c), t)
		}
		if op == "<<" {
			return intValue(t, a<<c), nil
		}
		if t.IsSigned() {
			return intValue(t, uint64(signExtend(a, t)>>c)), nil
		}
		return intValue(t, a>>c), nil
	}
	t := arithType(x.t, y.t)
	if t.IsFloat() {
		if op == "%" || op == "&" || op == "|" || op == "^" {
			return nil, errorf(ErrType, pos, "invalid operands to binary %s (floating)", op)
		}
		a, err := e.asFloat(x, pos)
		if err != nil {
			return nil, err
		}
		b, err := e.asFloat(y, pos)
		if err != nil {
			return nil, err
		}
		switch op {
		case "+":
			return floatValue(t, a+b), nil
		case "-":
			return floatValue(t, a-b), nil
		case "*":
			return floatValue(t, a*b), nil
		case "/":
			return floatValue(t, a/b), nil // IEEE: x/0 is inf or NaN, as in C
		}
		return e.compare(op, a < b, a == b, a > b, pos)
	}
	a, err := e.convertBits(x, t, pos)
	if err != nil {
		return nil, err
	}
	b, err := e.convertBits(y, t, pos)
	if err != nil {
		return nil, err
	}
	signed := t.IsSigned()
	sa, sb := signExtend(a, t), signExtend(b, t)
	switch op {
	case "+":
		return intValue(t, a+b), nil
	case "-":
		return intValue(t, a-b), nil
	case "*":
		return intValue(t, a*b), nil
	case "/", "%":
		if b == 0 {
			return nil, errorf(ErrDivideByZero, pos, "division by zero")
		}
		if signed {
			if sb == -1 { // MIN / -1 overflows in C; define it as wrapping
				if op == "/" {
					return intValue(t, uint64(-sa)), nil
				}
				return intValue(t, 0), nil
			}
			if op == "/" {
				return intValue(t, uint64(sa/sb)), nil
			}
			return intValue(t, uint64(sa%sb)), nil
		}
		mask := maskOf(t)
		if op == "/" {
			return intValue(t, (a&mask)/(b&mask)), nil
		}
		return intValue(t, (a&mask)%(b&mask)), nil
	case "&":
		return intValue(t, a&b), nil
	case "|":
		return intValue(t, a|b), nil
	case "^":
		return intValue(t, a^b), nil
	}
	if signed {
		return e.compare(op, sa < sb, sa == sb, sa > sb, pos)
	}
	a, b = a&maskOf(t), b&maskOf(t)
	return e.compare(op, a < b, a == b, a > b, pos)
}

func maskOf(t *variables.Type) uint64 {
	s := t.ByteSize()
	if s >= 8 || s <= 0 {
		return ^uint64(0)
	}
	return 1<<(8*uint(s)) - 1
}

func signExtend(u uint64, t *variables.Type) int64 {
	s := t.ByteSize()
	if s >= 8 || s <= 0 {
		return int64(u)
	}
	shift := 64 - 8*uint(s)
	return int64(u<<shift) >> shift
}

func (e *evaluator) compare(op string, lt, eq, gt bool, pos int) (*value, error) {
	var r bool
	switch op {
	case "<":
		r = lt
	case ">":
		r = gt
	case "<=":
		r = lt || eq
	case ">=":
		r = gt || eq
	case "==":
		r = eq
	case "!=":
		r = !eq
	default:
		return nil, errorf(ErrType, pos, "invalid operator %s here", op)
	}
	return e.boolValue(r), nil
}

// lang is the language of the innermost scope expressions are evaluated
// in (C without one, as gdb's "auto; currently c").
func (e *evaluator) lang() variables.Language {
	if len(e.env.Scopes) == 0 {
		return variables.LangC
	}
	return e.env.Scopes[0].Language()
}

// boolValue is the result of a comparison or a logical operator: a bool in
// C++ and Rust (gdb prints true), an int in C (1).
func (e *evaluator) boolValue(b bool) *value {
	t := typeInt
	if e.lang() != variables.LangC {
		t = typeBool
	}
	if b {
		return intValue(t, 1)
	}
	return intValue(t, 0)
}

// complete returns the definition of t where its unit only declares it
// (another unit of the module defines it), else t.
func (e *evaluator) complete(t *variables.Type) *variables.Type {
	if s := t.Strip(); e.env.Reader != nil && s != nil && s.Declaration {
		return e.env.Reader.Complete(t)
	}
	return t
}

// isBool reports whether t is a boolean type (bool, _Bool).
func isBool(t *variables.Type) bool {
	s := t.Strip()
	return s != nil && s.Kind == variables.KindBase && s.Encoding == variables.EncBoolean
}

func (e *evaluator) asFloat(v *value, pos int) (float64, error) {
	if v.t.IsFloat() {
		return e.float(v, pos)
	}
	u, err := e.bits(v, pos)
	if err != nil {
		return 0, err
	}
	if v.t.IsSigned() {
		return float64(signExtend(u, promote(v.t))), nil
	}
	return float64(u), nil
}

// convertBits converts an integer operand to integer type t's bits.
func (e *evaluator) convertBits(v *value, t *variables.Type, pos int) (uint64, error) {
	u, err := e.bits(v, pos)
	if err != nil {
		return 0, err
	}
	return u & maskOf(t), nil
}

func (e *evaluator) pointerArith(op string, x, y *value, pos int) (*value, error) {
	xp, yp := x.t.IsPointer(), y.t.IsPointer()
	a, err := e.bits(x, pos)
	if err != nil {
		return nil, err
	}
	b, err := e.bits(y, pos)
	if err != nil {
		return nil, err
	}
	elemSize := func(p *value) (uint64, error) {
		s := p.t.Strip().Elem.ByteSize()
		if s <= 0 {
			if st := p.t.Strip().Elem.Strip(); st != nil && st.Kind == variables.KindFunction {
				return 1, nil
			}
			return 0, errorf(ErrType, pos, "arithmetic on a pointer to an incomplete type %s", p.t)
		}
		return uint64(s), nil
	}
	switch op {
	case "+", "-":
		switch {
		case xp && yp:
			if op == "+" {
				return nil, errorf(ErrType, pos, "cannot add two pointers")
			}
			s, err := elemSize(x)
			if err != nil {
				return nil, err
			}
			return intValue(typeLong, uint64((int64(a)-int64(b))/int64(s))), nil
		case xp && y.t.IsInteger():
			s, err := elemSize(x)
			if err != nil {
				return nil, err
			}
			off := uint64(signExtend(b, promote(y.t)))
			if !y.t.IsSigned() {
				off = b
			}
			if op == "-" {
				off = -off
			}
			return intValue(x.t.Strip(), a+off*s), nil
		case yp && x.t.IsInteger() && op == "+":
			return e.pointerArith(op, y, x, pos)
		}
	case "<", ">", "<=", ">=", "==", "!=":
		if (xp || x.t.IsInteger()) && (yp || y.t.IsInteger()) {
			return e.compare(op, a < b, a == b, a > b, pos)
		}
	}
	return nil, errorf(ErrType, pos, "invalid operands to binary %s (%s and %s)", op, x.t, y.t)
}

// findMember finds a member by name, searching anonymous members and base
// classes; it returns the field and the offset of the subobject holding it.
// Virtual bases have no fixed offset: virtualBase computes it from the
// address of the subobject that has the base (nil: they are not searched).
//
// complete (nil: none) gives the definition of a base class the unit only
// declares: GCC describes a class with a key function (pugixml's
// xml_tree_walker) only in the unit defining that function, so a derived
// class's other units see its bases as declarations.
func findMember(t *variables.Type, name string, at int64, virtualBase func(f *variables.Field, at int64) (int64, bool), complete func(*variables.Type) *variables.Type, depth int) (*variables.Field, int64, bool) {
	s := t.Strip()
	if s == nil || depth > 16 {
		return nil, 0, false
	}
	for i := range s.Fields {
		f := &s.Fields[i]
		if f.Name == name && !f.Base {
			return f, at, true
		}
	}
	for i := range s.Fields {
		f := &s.Fields[i]
		if f.Name != "" && !f.Base {
			continue
		}
		off := at + f.Offset
		if f.OffsetExpr != nil {
			var ok bool
			if virtualBase == nil {
				continue
			}
			if off, ok = virtualBase(f, at); !ok {
				continue
			}
		}
		ft := f.Type
		if complete != nil {
			ft = complete(ft)
		}
		if g, goff, ok := findMember(ft, name, off, virtualBase, complete, depth+1); ok {
			return g, goff, true
		}
	}
	// A Rust enum's variant by name (opt.Some.__0): the variant's data,
	// whichever variant the value holds.
	if s.Variants != nil {
		for i := range s.Variants.Variants {
			if f := &s.Variants.Variants[i].Field; f.Name == name {
				return f, at + f.Offset, true
			}
		}
	}
	return nil, 0, false
}

// virtualBaseOffset evaluates a virtual base's DW_AT_data_member_location
// (which reads the object's vtable) for the object at addr; it returns the
// base's offset from addr.
func (e *evaluator) virtualBaseOffset(f *variables.Field, addr uint64) (int64, bool) {
	if e.env.Frame == nil {
		return 0, false
	}
	res, err := dwarfexpr.Eval(f.OffsetExpr, frameTarget{e.env.Frame}, &dwarfexpr.Config{MaxSteps: 1000}, addr)
	if err != nil {
		return 0, false
	}
	v, ok := res.Word()
	return int64(v - addr), ok
}

// frameTarget lets dwarfexpr read through a frame.
type frameTarget struct{ f variables.Frame }

func (t frameTarget) ReadMemory(buf []byte, addr uint64) (int, error) {
	return t.f.ReadMemory(buf, addr)
}
func (t frameTarget) Register(reg uint64) (uint64, error) {
	b, err := t.f.Register(int(reg))
	if err != nil {
		return 0, err
	}
	var w [8]byte
	copy(w[:], b)
	return binary.LittleEndian.Uint64(w[:]), nil
}

func (e *evaluator) member(n *Member, d int) (*value, error) {
	x, err := e.eval(n.X, d)
	if err != nil {
		return nil, err
	}
	if n.Arrow {
		x, err = e.decay(x, n.P)
		if err != nil {
			return nil, err
		}
		if !x.t.IsPointer() {
			p, ok, err := e.smartPointer(x, n.P)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, errorf(ErrType, n.P, "the -> operator needs a pointer, not %s", x.t)
			}
			x = p
		}
		if x, err = e.deref(x, n.P); err != nil {
			return nil, err
		}
	} else if x.t.IsPointer() {
		// gdb is lenient: p.x on a pointer means p->x.
		if x, err = e.deref(x, n.P); err != nil {
			return nil, err
		}
	}
	if !x.t.IsComposite() {
		return nil, errorf(ErrType, n.P, "%s is not a structure or union", x.t)
	}
	if e.env.Reader != nil && x.t.Strip().Declaration {
		x.t = e.env.Reader.Complete(x.t)
	}
	var f *variables.Field
	var base int64
	if n.Ref != "" {
		ref, err := e.symbol(n.P, n.Ref)
		if err != nil {
			return nil, err
		}
		if ref.Field == nil {
			return nil, errorf(ErrType, n.P, "${%s} is not a member", n.Ref)
		}
		f = ref.Field
		if !hasField(x.t.Strip(), f) {
			// A member of a base class: find the base's offset.
			found := false
			for _, bf := range x.t.Strip().Fields {
				if bf.Base && hasField(bf.Type.Strip(), f) {
					base, found = bf.Offset, true
				}
			}
			if !found {
				return nil, errorf(ErrNotFound, n.P, "${%s} is not a member of %s", n.Ref, x.t)
			}
		}
	} else {
		var ok bool
		var virtualBase func(f *variables.Field, at int64) (int64, bool)
		if x.where == inMemory {
			virtualBase = func(f *variables.Field, at int64) (int64, bool) {
				off, ok := e.virtualBaseOffset(f, x.addr+uint64(at))
				return at + off, ok
			}
		}
		f, base, ok = findMember(x.t, n.Name, 0, virtualBase, e.complete, 0)
		if !ok {
			return nil, errorf(ErrNotFound, n.P, "there is no member named %s in %s", n.Name, x.t)
		}
	}
	off := base + f.Offset
	out := &value{t: f.Type, where: x.where, reg: x.reg}
	if f.BitSize > 0 {
		abs := base*8 + f.BitOffset // bits from the start of x
		out.bitSize = f.BitSize
		if x.where == inMemory {
			out.addr, out.bitOff = x.addr+uint64(abs/8), abs%8
			return out, nil
		}
		if err := e.load(x, n.P); err != nil {
			return nil, err
		}
		out.where, out.bytes, out.bitOff = inNowhere, x.bytes, abs
		return out, nil
	}
	if x.where == inMemory {
		out.addr = x.addr + uint64(off)
	} else {
		// A struct in registers or computed: slice its bytes.
		if x.bytes == nil {
			if err := e.load(x, n.P); err != nil {
				return nil, err
			}
		}
		size := f.Type.ByteSize()
		if off < 0 || size < 0 || off+size > int64(len(x.bytes)) {
			return nil, errorf(ErrType, n.P, "member %s lies outside the value", n.Name)
		}
		out.bytes = x.bytes[off : off+size]
		if x.unavail != nil {
			out.unavail = x.unavail[off : off+size]
		}
		out.where = inNowhere // a part of a register is not assignable on its own
	}
	return e.autoDeref(out, n.P)
}

func (e *evaluator) index(n *Index, d int) (*value, error) {
	x, err := e.eval(n.X, d)
	if err != nil {
		return nil, err
	}
	i, err := e.eval(n.I, d)
	if err != nil {
		return nil, err
	}
	if x.t.IsInteger() { // i[a] is a[i] in C
		x, i = i, x
	}
	if x.implicit != nil && x.t.IsPointer() {
		if k, err := e.bits(i, n.P); err != nil || k != 0 {
			return nil, errorf(ErrOptimizedOut, n.P, "synthetic pointer: only element 0 is known")
		}
		return e.deref(x, n.P)
	}
	if !i.t.IsInteger() {
		return nil, errorf(ErrType, n.P, "array subscript is not an integer")
	}
	k, err := e.bits(i, n.P)
	if err != nil {
		return nil, err
	}
	idx := int64(k)
	if !i.t.IsSigned() && k > math.MaxInt64 {
		return nil, errorf(ErrType, n.P, "array subscript %d is too large", k)
	}
	s := x.t.Strip()
	if s != nil && s.Kind == variables.KindArray && x.where != inMemory {
		if x.bytes == nil {
			if err := e.load(x, n.P); err != nil {
				return nil, err
			}
		}
		es := s.Elem.ByteSize()
		off := (idx - s.Lower) * es
		if es <= 0 || off < 0 || off+es > int64(len(x.bytes)) {
			return nil, errorf(ErrType, n.P, "index %d is outside the array", idx)
		}
		elem := &value{t: s.Elem, bytes: x.bytes[off : off+es]}
		if x.unavail != nil {
			elem.unavail = x.unavail[off : off+es]
		}
		return elem, elem.known(n.P)
	}
	if s != nil && s.Kind == variables.KindArray {
		es := s.Elem.ByteSize()
		if es < 0 {
			return nil, errorf(ErrType, n.P, "element size of %s is unknown", x.t)
		}
		return e.autoDeref(&value{t: s.Elem, where: inMemory, addr: x.addr + uint64((idx-s.Lower)*es)}, n.P)
	}
	if k := stdKind(x.t); k != "" {
		return e.index(&Index{P: n.P, X: stdData(k, n.X, n.P), I: n.I}, d)
	}
	if el, ok, err := e.rustElement(x, idx, n.P); ok {
		if err != nil {
			return nil, err
		}
		return e.autoDeref(el, n.P)
	}
	if s == nil || !x.t.IsPointer() {
		return nil, errorf(ErrType, n.P, "cannot subscript %s", x.t)
	}
	p, err := e.pointerArith("+", x, i, n.P)
	if err != nil {
		return nil, err
	}
	return e.deref(p, n.P)
}

// convert converts v to type t (casts and assignment).
func (e *evaluator) convert(v *value, t *variables.Type, pos int, explicit bool) (*value, error) {
	s := t.Strip()
	if s == nil || s.Kind == variables.KindVoid {
		return &value{t: t}, nil
	}
	switch s.Kind {
	case variables.KindStruct, variables.KindClass, variables.KindUnion, variables.KindArray:
		if vs := v.t.Strip(); vs == s || vs != nil && vs.Name != "" && vs.Name == s.Name && vs.Kind == s.Kind {
			if err := e.load(v, pos); err != nil {
				return nil, err
			}
			return &value{t: t, bytes: v.bytes}, nil
		}
		if s.Kind == variables.KindArray && v.t.Strip() != nil && v.t.Strip().Kind == variables.KindArray && !explicit {
			// char buf[8] = "abc": copy what fits, zero the rest.
			if err := e.load(v, pos); err != nil {
				return nil, err
			}
			if sz := t.ByteSize(); sz >= 0 {
				b := make([]byte, sz)
				copy(b, v.bytes)
				return &value{t: t, bytes: b}, nil
			}
		}
		return nil, errorf(ErrType, pos, "cannot convert %s to %s", v.t, t)
	}
	v, err := e.decay(v, pos)
	if err != nil {
		return nil, err
	}
	if !isScalar(v.t) {
		return nil, errorf(ErrType, pos, "cannot convert %s to %s", v.t, t)
	}
	switch {
	case t.IsFloat():
		f, err := e.asFloat(v, pos)
		if err != nil {
			return nil, err
		}
		out := floatValue(s, f)
		out.t = t
		return out, nil
	case s.Kind == variables.KindBase && s.Encoding == variables.EncBoolean:
		ok, err := e.truth(v, pos)
		if err != nil {
			return nil, err
		}
		return intValue(t, map[bool]uint64{true: 1, false: 0}[ok]), nil
	case t.IsInteger() || t.IsPointer() || s.Kind == variables.KindReference:
		if v.t.IsFloat() {
			f, err := e.float(v, pos)
			if err != nil {
				return nil, err
			}
			var u uint64
			switch {
			case math.IsNaN(f) || math.IsInf(f, 0):
			case t.IsSigned():
				u = uint64(int64(math.Max(math.Min(f, math.MaxInt64), math.MinInt64)))
			case f >= 0:
				u = uint64(math.Min(f, math.MaxUint64))
			default:
				u = uint64(int64(math.Max(f, math.MinInt64)))
			}
			return intValue(t, u), nil
		}
		u, err := e.bits(v, pos)
		if err != nil {
			return nil, err
		}
		if t.IsPointer() && v.t.IsPointer() && u != 0 {
			u += baseAdjust(v.t.Strip().Elem, s.Elem)
		}
		return intValue(t, u), nil
	}
	return nil, errorf(ErrType, pos, "cannot convert %s to %s", v.t, t)
}

// assign evaluates lhs op= rhs: the target changes through the frame's
// variables.Writer.
func (e *evaluator) assign(n *Binary, d int) (*value, error) {
	lhs, err := e.eval(n.X, d)
	if err != nil {
		return nil, err
	}
	rhs, err := e.eval(n.Y, d)
	if err != nil {
		return nil, err
	}
	if n.Op != "=" {
		cur := *lhs
		if rhs, err = e.arith(n.Op[:len(n.Op)-1], &cur, rhs, n.P); err != nil {
			return nil, err
		}
	}
	nv, err := e.convert(rhs, lhs.t, n.P, false)
	if err != nil {
		return nil, err
	}
	if err := e.store(lhs, nv.bytes, n.P); err != nil {
		return nil, err
	}
	return lhs, nil
}

// store writes data (the value's bytes in lhs's type) to an lvalue.
func (e *evaluator) store(lhs *value, data []byte, pos int) error {
	if lhs.where == inNowhere {
		return errorf(ErrNotAssignable, pos, "left operand of assignment is not an lvalue")
	}
	w, ok := e.env.Frame.(variables.Writer)
	if !ok || e.env.Frame == nil {
		return errorf(ErrUnsupported, pos, "the target cannot be written (a core file?)")
	}
	if lhs.isBitField() {
		if err := e.load(lhs, pos); err != nil {
			return err
		}
		var val uint64
		var w8 [8]byte
		copy(w8[:], data)
		val = binary.LittleEndian.Uint64(w8[:])
		storage := append([]byte(nil), lhs.bytes...)
		for i := int64(0); i < lhs.bitSize; i++ {
			bit := lhs.bitOff + i
			mask := byte(1 << (bit % 8))
			if val>>uint(i)&1 != 0 {
				storage[bit/8] |= mask
			} else {
				storage[bit/8] &^= mask
			}
		}
		data = storage
	}
	var err error
	switch lhs.where {
	case inMemory:
		err = w.WriteMemory(lhs.addr, data)
	case inRegister:
		err = w.WriteRegister(lhs.reg, data)
	}
	if err != nil {
		kind := ErrMemory
		var coded interface{ TCFCode() int }
		if errors.As(err, &coded) && coded.TCFCode() == codeUnsupported {
			kind = ErrUnsupported
		}
		return &Error{Kind: kind, Pos: pos, Msg: "cannot write", Err: err}
	}
	lhs.bytes = append([]byte(nil), data...)
	return nil
}

// Assign writes data, the raw bytes of the expression's type, to the object
// the expression designates (TCF Expressions.assign).
func Assign(n Node, env *Env, data []byte) (err error) {
	e := &evaluator{env: env}
	defer func() {
		if p := recover(); p != nil {
			err = errorf(ErrOther, n.Pos(), "internal error: %v", p)
		}
	}()
	lhs, err := e.eval(n, 0)
	if err != nil {
		return err
	}
	size := lhs.t.ByteSize()
	if lhs.isBitField() {
		size = 8
		data = append(data, make([]byte, max(0, 8-len(data)))...)
	} else if int64(len(data)) != size {
		return errorf(ErrType, n.Pos(), "%d bytes given for a %d-byte %s", len(data), size, lhs.t)
	}
	return e.store(lhs, data, n.Pos())
}

// baseAdjust is what C++ adds to a pointer converted from class from to
// class to: the offset of the base subobject for an upcast, its negation
// for a downcast, 0 for unrelated types (C's reinterpreting casts).
func baseAdjust(from, to *variables.Type) uint64 {
	f, t := from.Strip(), to.Strip()
	if f == nil || t == nil || f == t || !f.IsComposite() || !t.IsComposite() {
		return 0
	}
	if off, ok := baseOffset(f, t, 0); ok {
		return uint64(off)
	}
	if off, ok := baseOffset(t, f, 0); ok {
		return uint64(-off)
	}
	return 0
}

// baseOffset finds base (by identity or name) among the non-virtual bases
// of derived, recursively.
func baseOffset(derived, base *variables.Type, depth int) (int64, bool) {
	if depth > 16 {
		return 0, false
	}
	for _, f := range derived.Fields {
		if !f.Base || f.OffsetExpr != nil {
			continue
		}
		b := f.Type.Strip()
		if b == base || b.Name != "" && b.Name == base.Name && b.Kind == base.Kind {
			return f.Offset, true
		}
		if off, ok := baseOffset(b, base, depth+1); ok {
			return f.Offset + off, true
		}
	}
	return 0, false
}

// hasField reports whether f is one of t's own fields (the same DIE).
func hasField(t *variables.Type, f *variables.Field) bool {
	for i := range t.Fields {
		if &t.Fields[i] == f || t.Fields[i].Offset0 != 0 && t.Fields[i].Offset0 == f.Offset0 {
			return true
		}
	}
	return false
}

// derefImplicit reads what an implicit pointer points to: a variable (or a
// part of it) that lives in registers or was computed.
func (e *evaluator) derefImplicit(it *implicitTarget, elem *variables.Type, pos int) (*value, error) {
	var target *variables.Variable
	for _, s := range e.env.Scopes {
		for _, v := range s.Vars {
			if v.Offset == it.die {
				target = v
			}
		}
	}
	if target == nil {
		v, err := it.reader.VariableAt(it.die)
		if err != nil {
			return nil, wrap(pos, "target of a synthetic pointer", err)
		}
		v.Scope = it.scope
		target = v
	}
	tv, err := e.variable(target, it.reader, it.frame, pos)
	if err != nil {
		return nil, err
	}
	size := elem.ByteSize()
	out := &value{t: elem, where: tv.where, reg: tv.reg, sym: nil}
	switch tv.where {
	case inMemory:
		out.addr = tv.addr + uint64(it.offset)
	default:
		if err := e.load(tv, pos); err != nil {
			return nil, err
		}
		if size < 0 || it.offset < 0 || it.offset+size > int64(len(tv.bytes)) {
			return nil, errorf(ErrType, pos, "synthetic pointer points outside its target")
		}
		out.bytes = tv.bytes[it.offset : it.offset+size]
		if tv.unavail != nil {
			out.unavail = tv.unavail[it.offset : it.offset+size]
		}
		if it.offset != 0 || size != int64(len(tv.bytes)) {
			out.where = inNowhere
		}
	}
	return out, nil
}
