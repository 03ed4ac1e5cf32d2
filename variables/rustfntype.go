package variables

import (
	"strconv"
	"strings"
)

// rustFnString spells a Rust function type, or a pointer to one, and a
// named struct, union or enum, as gdb does in a Rust frame: fn (i32, i32) -> i32 (no arrow when it returns
// ()), *mut fn (&str) for the pointer; pointers and references as *mut T
// (gdb drops rustc's names of pointer types), named types qualified
// (*mut dap_fnptr::Counter). ok is false for other types, which keep
// TypeString's spelling.
func (r *Reader) rustFnString(t *Type) (string, bool) {
	s := t.Strip()
	if s == nil {
		return "", false
	}
	if s.Kind == KindPointer && s.Elem.Strip() != nil && s.Elem.Strip().Kind == KindFunction {
		return "*mut " + r.rustSpell(s.Elem, 0), true
	}
	if s.Kind == KindFunction {
		return r.rustSpell(s, 0), true
	}
	if t.Kind == KindStruct || t.Kind == KindUnion || t.Kind == KindEnum {
		// A named Rust type as rust-gdb's whatis: core::option::Option<usize>,
		// not C's "struct Option<usize>".
		if t.Name != "" {
			return r.ScopedName(t), true
		}
	}
	return "", false
}

func (r *Reader) rustSpell(t *Type, depth int) string {
	if depth > 16 {
		return "..."
	}
	if t == nil || t.Kind == KindVoid {
		return "()"
	}
	switch t.Kind {
	case KindConst, KindVolatile, KindRestrict, KindAtomic:
		return r.rustSpell(t.Elem, depth+1)
	case KindPointer, KindReference, KindRValueReference:
		return "*mut " + r.rustSpell(t.Elem, depth+1)
	case KindArray:
		return "[" + r.rustSpell(t.Elem, depth+1) + "; " + strconv.FormatInt(t.Count, 10) + "]"
	case KindFunction:
		var ps []string
		for _, p := range t.Params {
			ps = append(ps, r.rustSpell(p, depth+1))
		}
		out := "fn (" + strings.Join(ps, ", ") + ")"
		if ret := t.Elem.Strip(); ret != nil && ret.Kind != KindVoid && !(ret.IsComposite() && ret.Name == "()") {
			out += " -> " + r.rustSpell(t.Elem, depth+1)
		}
		return out
	case KindStruct, KindClass, KindUnion, KindEnum, KindTypedef:
		if t.Name != "" {
			return r.ScopedName(t)
		}
	}
	if t.Name != "" {
		return t.Name
	}
	return t.String()
}
