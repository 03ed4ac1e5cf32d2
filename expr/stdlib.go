package expr

import (
	"bytes"
	"strings"

	"github.com/sondedbg/sonde/variables"
)

// libstdc++'s std::vector and std::string as gdb's xmethods show them to
// a watch expression: v[i] is the element, s[i] the character, and a
// string compares equal to a string literal by its text (found in a
// `sonde dap` trial on jsoncpp: `members[1]` was "cannot subscript
// Members" and the breakpoint condition `name == "nested"` an error).
// The member chains are libstdc++'s (the layouts variables/pretty.go
// reads); nothing is called in the target.

// maxStdString bounds the text read for a comparison.
const maxStdString = 1 << 20

// stdKind says which library class t is: "vector", "string" or "".
func stdKind(t *variables.Type) string {
	s := t.Strip()
	if s == nil || (s.Kind != variables.KindStruct && s.Kind != variables.KindClass) {
		return ""
	}
	switch {
	case strings.HasPrefix(s.Name, "vector<") && !strings.HasPrefix(s.Name, "vector<bool,"):
		return "vector"
	case strings.HasPrefix(s.Name, "basic_string<char,"):
		return "string"
	}
	return ""
}

// stdData is the node of a vector's or string's data pointer.
func stdData(kind string, x Node, pos int) Node {
	if kind == "vector" {
		return &Member{P: pos, X: &Member{P: pos, X: x, Name: "_M_impl"}, Name: "_M_start"}
	}
	return &Member{P: pos, X: &Member{P: pos, X: x, Name: "_M_dataplus"}, Name: "_M_p"}
}

// stdStringText reads the text of the std::string node x.
func (e *evaluator) stdStringText(x Node, pos, d int) ([]byte, error) {
	n, err := e.eval(&Member{P: pos, X: x, Name: "_M_string_length"}, d)
	if err != nil {
		return nil, err
	}
	length, err := e.bits(n, pos)
	if err != nil {
		return nil, err
	}
	if length > maxStdString {
		return nil, errorf(ErrType, pos, "string of %d bytes is too long to compare", length)
	}
	p, err := e.eval(stdData("string", x, pos), d)
	if err != nil {
		return nil, err
	}
	addr, err := e.bits(p, pos)
	if err != nil {
		return nil, err
	}
	text := &value{t: ArrayOf(typeChar, int64(length)), where: inMemory, addr: addr}
	if length == 0 {
		return nil, nil
	}
	if err := e.load(text, pos); err != nil {
		return nil, err
	}
	return text.bytes, nil
}

// stdStringCompare answers s == "lit" and s != "lit" (either side) for a
// std::string s; ok is false for any other operands.
func (e *evaluator) stdStringCompare(n *Binary, x, y *value, d int) (*value, bool, error) {
	if n.Op != "==" && n.Op != "!=" {
		return nil, false, nil
	}
	sx, lit := n.X, y
	if stdKind(x.t) != "string" {
		sx, lit = n.Y, x
		if stdKind(y.t) != "string" {
			return nil, false, nil
		}
	}
	ls := lit.t.Strip()
	if ls == nil || ls.Kind != variables.KindArray || ls.Elem == nil || ls.Elem.Strip() == nil || ls.Elem.Strip().ByteSize() != 1 {
		return nil, false, nil
	}
	if err := e.load(lit, n.P); err != nil {
		return nil, true, err
	}
	want, _, _ := bytes.Cut(lit.bytes, []byte{0})
	got, err := e.stdStringText(sx, n.P, d)
	if err != nil {
		return nil, true, err
	}
	eq := bytes.Equal(got, want) == (n.Op == "==")
	return e.boolValue(eq), true, nil
}

// part is the piece of x at off of type t (a member found by layout, not
// by name), in memory where x is.
func (e *evaluator) part(x *value, off int64, t *variables.Type, pos int) (*value, error) {
	if x.where == inMemory {
		return &value{t: t, where: inMemory, addr: x.addr + uint64(off)}, nil
	}
	if x.bytes == nil {
		if err := e.load(x, pos); err != nil {
			return nil, err
		}
	}
	size := t.ByteSize()
	if off < 0 || size < 0 || off+size > int64(len(x.bytes)) {
		return nil, errorf(ErrType, pos, "%s lies outside the value", t)
	}
	out := &value{t: t, where: inNowhere, bytes: x.bytes[off : off+size]}
	if x.unavail != nil {
		out.unavail = x.unavail[off : off+size]
	}
	return out, nil
}

// smartPointer returns the raw pointer of a std::unique_ptr or
// std::shared_ptr x, for `*sp` and `sp->member` as gdb's xmethods answer
// them (found in a `sonde dap` trial on yaml-cpp: `*m_pMemory`, a
// shared_ptr, was "Cannot dereference shared_memory_holder"); ok is false
// for any other value.
func (e *evaluator) smartPointer(x *value, pos int) (*value, bool, error) {
	off, pt, ok := variables.SmartPointer(x.t)
	if !ok {
		return nil, false, nil
	}
	p, err := e.part(x, off, pt, pos)
	return p, true, err
}

// maxRustIndex bounds a Rust slice's or Vec's length read from the target.
const maxRustIndex = 1 << 40

// rustElement returns element idx of a Rust slice or Vec x, bounds checked
// by its length as Rust and gdb check a slice's (gdb subscripts slices but
// not Vecs; lldb-vscode 14 parses neither); ok is false for any other
// value (found on strsim: `a_elems[1]`, a &[char], was "Cannot subscript").
func (e *evaluator) rustElement(x *value, idx int64, pos int) (*value, bool, error) {
	po, lo, elem, ok := variables.RustSequence(x.t)
	if !ok {
		return nil, false, nil
	}
	n, err := e.part(x, lo, typeULong, pos)
	if err != nil {
		return nil, true, err
	}
	length, err := e.bits(n, pos)
	if err != nil {
		return nil, true, err
	}
	if length > maxRustIndex {
		return nil, true, errorf(ErrType, pos, "the length %d is not believable", length)
	}
	if idx < 0 || uint64(idx) >= length {
		return nil, true, errorf(ErrType, pos, "index %d is out of bounds: the length is %d", idx, length)
	}
	es := elem.ByteSize()
	if es < 0 {
		return nil, true, errorf(ErrType, pos, "element size of %s is unknown", elem)
	}
	p, err := e.part(x, po, PointerTo(elem), pos)
	if err != nil {
		return nil, true, err
	}
	base, err := e.bits(p, pos)
	if err != nil {
		return nil, true, err
	}
	return &value{t: elem, where: inMemory, addr: base + uint64(idx*es)}, true, nil
}
