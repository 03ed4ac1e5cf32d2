package variables

import "strings"

// SmartPointer finds the raw pointer inside a libstdc++ std::unique_ptr or
// std::shared_ptr of type t: its offset in the value and its type (what
// gdb's libstdc++ xmethods for operator* and operator-> return, so that a
// watch `*sp` or `sp->member` reads the pointee). ok is false for any other
// type, std::weak_ptr included (it has no operator*).
func SmartPointer(t *Type) (off int64, pt *Type, ok bool) {
	s := t.Strip()
	if s == nil || !s.IsComposite() {
		return 0, nil, false
	}
	switch {
	case strings.HasPrefix(s.Name, "unique_ptr<"):
		off, pt, ok = pointerMember(s, "_M_head_impl", []string{"_M_t"}, 0)
	case strings.HasPrefix(s.Name, "shared_ptr<"), strings.HasPrefix(s.Name, "__shared_ptr<"):
		off, pt, ok = member(s, "_M_ptr")
	default:
		return 0, nil, false
	}
	if !ok || pt.Strip() == nil || pt.Strip().Kind != KindPointer {
		return 0, nil, false
	}
	return off, pt, true
}

// RustSequence finds the elements of a Rust slice (&[T], &mut [T]) or
// Vec<T> of type t: the offsets of its data pointer and length in the value
// and the element type. The Vec's pointer lies under buf.inner.ptr...
// (wrappers that change between Rust versions; newer ones make it a *u8,
// so the element type is the Vec's parameter T).
func RustSequence(t *Type) (ptrOff, lenOff int64, elem *Type, ok bool) {
	s := t.Strip()
	if s == nil || !s.IsComposite() {
		return 0, 0, nil, false
	}
	switch {
	case strings.HasPrefix(s.Name, "&[") || strings.HasPrefix(s.Name, "&mut ["):
		po, pt, ok1 := member(s, "data_ptr")
		lo, _, ok2 := member(s, "length")
		if !ok1 || !ok2 || pt.Strip() == nil || pt.Strip().Kind != KindPointer || pt.Strip().Elem == nil {
			return 0, 0, nil, false
		}
		return po, lo, pt.Strip().Elem, true
	case strings.HasPrefix(s.Name, "Vec<"):
		for _, p := range s.TemplateParams {
			if p.Name == "T" && !p.HasValue {
				elem = p.Type
			}
		}
		lo, _, ok1 := member(s, "len")
		po, pt, ok2 := pointerMember(s, "pointer", []string{"buf", "inner", "ptr", "pointer"}, 0)
		if elem == nil || !ok1 || !ok2 || pt == nil {
			return 0, 0, nil, false
		}
		return po, lo, elem, true
	}
	return 0, 0, nil, false
}
