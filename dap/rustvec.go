package dap

import (
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/expr"
	"github.com/sondedbg/sonde/variables"
)

// A Rust Vec<T> shows "Vec(size=N)" (gdb's Rust printer's words) and
// expands to its elements [0], [1], ... paged, each named by the expression
// ((T*)(v).buf.<...>.pointer)[i]: the data pointer is untyped (*u8) in
// newer Rust versions' RawVecInner, so the element type comes from the
// Vec's template parameter, spelled as expr parses it (a C name of the same
// size for a primitive, the qualified name for a struct or enum). Where that
// spelling does not evaluate, the Vec shows its raw members as before.
// A char element is named by its DIE (${t:0xDIE}, as containers' elements
// are): C has no type of its encoding.

// rustVecLayout finds a Vec's length and data pointer (its offset and the
// member path naming it) and its element type.
func rustVecLayout(t *variables.Type) (lenOff, ptrOff int64, path string, elem *variables.Type, ok bool) {
	if t == nil || !strings.HasPrefix(t.Name, "Vec<") || !t.IsComposite() {
		return 0, 0, "", nil, false
	}
	for _, p := range t.TemplateParams {
		if p.Name == "T" && !p.HasValue {
			elem = p.Type
		}
	}
	lo, ok1 := fieldOffset(t, "len")
	bo, ok2 := fieldOffset(t, "buf")
	cur, ok3 := memberType(t, "buf")
	if elem == nil || elem.ByteSize() <= 0 || !ok1 || !ok2 || !ok3 {
		return 0, 0, "", nil, false
	}
	off, path := bo, "buf"
	for depth := 0; depth < 8; depth++ {
		found := false
		for _, name := range []string{"inner", "ptr", "pointer"} {
			o, ok1 := fieldOffset(cur, name)
			mt, ok2 := memberType(cur, name)
			if ok1 && ok2 {
				off, cur, path, found = off+o, mt, path+"."+name, true
				break
			}
		}
		if !found {
			return 0, 0, "", nil, false
		}
		if cur.Kind == variables.KindPointer {
			return lo, off, path, elem, true
		}
	}
	return 0, 0, "", nil, false
}

// rustVecLength returns a Vec value's length.
func rustVecLength(t *variables.Type, b []byte) (int, bool) {
	lo, _, _, _, ok := rustVecLayout(t)
	if !ok || lo < 0 || lo+8 > int64(len(b)) {
		return 0, false
	}
	n := binary.LittleEndian.Uint64(b[lo:])
	if n > 1<<31 {
		return 0, false
	}
	return int(n), true
}

// rustVecSummary prints a Vec's value.
func rustVecSummary(t *variables.Type, b []byte) (string, bool) {
	n, ok := rustVecLength(t, b)
	if !ok {
		return "", false
	}
	return "Vec(size=" + strconv.Itoa(n) + ")", true
}

// rustVecChildren names elements start.. of a Vec (count 0: all, up to
// maxChildren), when the element expression evaluates.
func rustVecChildren(fe *frameEnv, paren string, t *variables.Type, b []byte, start, count int) (names, exprs []string, ok bool) {
	n, ok := rustVecLength(t, b)
	_, _, path, elem, ok2 := rustVecLayout(t)
	if !ok || !ok2 {
		return nil, nil, false
	}
	spelled := rustTypeSpelling(fe, elem)
	if spelled == "" {
		return nil, nil, false
	}
	base := "((" + spelled + "*)" + paren + "." + path + ")"
	if n > 0 {
		if _, err := expr.Eval(base+"[0]", fe.env); err != nil {
			return nil, nil, false
		}
	}
	start = max(start, 0)
	if count <= 0 {
		count = n
	}
	count = min(count, maxChildren)
	for i := start; i < n && i < start+count; i++ {
		names = append(names, "["+strconv.Itoa(i)+"]")
		exprs = append(exprs, base+"["+strconv.Itoa(i)+"]")
	}
	return names, exprs, true
}

// rustTypeSpelling spells a type for a cast in package expr: a C type of
// the same size and kind for a primitive (i64 is long), the qualified name
// otherwise; "" when there is none.
func rustTypeSpelling(fe *frameEnv, t *variables.Type) string {
	s := t.Strip()
	if s == nil {
		return ""
	}
	if s.Kind == variables.KindBase {
		size := s.ByteSize()
		switch {
		case s.Encoding == variables.EncFloat && size == 4:
			return "float"
		case s.Encoding == variables.EncFloat && size == 8:
			return "double"
		case s.Encoding == variables.EncBoolean && size == 1:
			return "bool"
		case s.Encoding == variables.EncUTF && s.Offset != 0:
			// Rust's char has no C spelling: "unsigned int" would print
			// 115 where gdb prints 115 's' (a Vec<char> in strsim's
			// damerau_levenshtein); its DIE keeps it a char.
			return "${t:0x" + strconv.FormatUint(s.Offset, 16) + "}"
		}
		signed := s.Encoding.Signed()
		name := map[int64]string{1: "char", 2: "short", 4: "int", 8: "long"}[size]
		if name == "" {
			return ""
		}
		if !signed {
			return "unsigned " + name
		}
		if size == 1 {
			return "signed char"
		}
		return name
	}
	if fe.reader == nil {
		return ""
	}
	return fe.reader.QualifiedName(s)
}

// isRustVec reports whether t is a Rust Vec<T> whose layout is known.
func isRustVec(t *variables.Type) bool {
	_, _, _, _, ok := rustVecLayout(t)
	return ok
}

// rustVecElementsShown reports whether a Vec's elements can be named (its
// element type spelled so that expr evaluates the first).
func rustVecElementsShown(fe *frameEnv, paren string, t *variables.Type, b []byte) bool {
	_, _, ok := rustVecChildren(fe, paren, t, b, 0, 1)
	return ok
}
