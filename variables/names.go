package variables

import (
	"debug/dwarf"
	"fmt"
	"sort"
	"strings"
)

// indexNames walks every unit once, recording global and static variables
// (outside functions) and named types by name; C++ names are recorded both
// plain and qualified by their namespaces and classes. A definition that
// completes a declaration elsewhere (DW_AT_specification: namespace members
// defined at file scope, static data members, out-of-line class
// definitions) is recorded under the declaration's qualified name. Callers
// hold r.mu.
func (r *Reader) indexNames() {
	r.namesOnce.Do(func() {
		r.globals = map[string][]dwarf.Offset{}
		r.typeNames = map[string][]dwarf.Offset{}
		r.enumNames = map[string][]dwarf.Offset{}
		r.qualified = map[dwarf.Offset]string{}
		qual := map[dwarf.Offset]string{} // qualified names of DIEs in namespaces and classes
		rd := r.dieReader()
		for _, u := range r.units {
			if u.unitType != utCompile && u.unitType != utType && u.unitType != 5 {
				continue // skeleton units have no DIEs to index (their .dwo is a child Reader)
			}
			rd.Seek(dwarf.Offset(u.dataOff))
			cu, err := rd.Next()
			// Null entries before a unit's DIE (padding some producers
			// leave) are skipped.
			for n := 0; err == nil && cu != nil && cu.Tag == 0 && n < 16; n++ {
				cu, err = rd.Next()
			}
			if err != nil || cu == nil || !cu.Children {
				continue
			}
			type level struct {
				prefix  string
				inClass bool
			}
			stack := []level{{}}
			for len(stack) > 0 {
				e, err := rd.Next()
				if err != nil {
					r.namesErr = &Error{Op: "index names", Err: fmt.Errorf("%w: %v", ErrBadDWARF, err)}
					break
				}
				if e == nil {
					break
				}
				if e.Tag == 0 {
					stack = stack[:len(stack)-1]
					continue
				}
				top := stack[len(stack)-1]
				name, _ := e.Val(dwarf.AttrName).(string)
				prefix := top.prefix
				if spec, ok := r.refOf(e, dwarf.AttrSpecification); ok {
					if q, ok := qual[spec]; ok {
						if i := strings.LastIndex(q, "::"); i >= 0 {
							prefix, name = q[:i], q[i+2:]
						} else {
							name = q
						}
					} else if name == "" {
						name = r.nameOf(e)
					}
				}
				q := name
				if prefix != "" && name != "" {
					q = prefix + "::" + name
				}
				if name != "" && (top.prefix != "" || e.Tag == dwarf.TagNamespace) {
					qual[e.Offset] = q
				}
				descend := false
				switch e.Tag {
				case dwarf.TagNamespace:
					p := q
					if name == "" {
						p = prefix // anonymous namespace: members are visible unqualified
					}
					if e.Children {
						stack = append(stack, level{prefix: p})
					}
					continue
				case dwarf.TagVariable, dwarf.TagMember:
					if top.inClass {
						break // static member declarations: only their names are needed
					}
					if e.Tag == dwarf.TagVariable {
						r.addName(r.globals, prefix, name, e.Offset)
					}
				case dwarf.TagBaseType, dwarf.TagTypedef, dwarf.TagStructType, dwarf.TagClassType,
					dwarf.TagUnionType, dwarf.TagEnumerationType, dwarf.TagUnspecifiedType:
					if name != "" && !top.inClass {
						r.addName(r.typeNames, prefix, name, e.Offset)
					}
					if name != "" && prefix != "" && e.Tag != dwarf.TagBaseType {
						r.qualified[e.Offset] = q
					}
					if e.Tag == dwarf.TagEnumerationType && e.Children {
						enumQ := ""
						if name != "" {
							enumQ = q
						}
						r.indexEnumerators(rd, prefix, enumQ, e.Offset)
						continue
					}
					descend = e.Tag != dwarf.TagBaseType && e.Tag != dwarf.TagTypedef && name != ""
				}
				if e.Children {
					if descend {
						stack = append(stack, level{prefix: q, inClass: true})
					} else {
						rd.SkipChildren()
					}
				}
			}
		}
	})
}

func (r *Reader) addName(m map[string][]dwarf.Offset, prefix, name string, off dwarf.Offset) {
	if name == "" {
		return
	}
	m[name] = append(m[name], off)
	if prefix != "" {
		q := prefix + "::" + name
		m[q] = append(m[q], off)
	}
}

// Globals returns the global and static variables (declared outside
// functions) named name ("ns::name" for C++ namespaces). Definitions with a
// location come first; declarations without one follow.
func (r *Reader) Globals(name string) ([]*Variable, error) {
	out, err := r.globalsHere(name)
	for _, c := range r.splitChildren() {
		if vs, cerr := c.Globals(name); cerr == nil {
			out, err = append(out, vs...), nil
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Loc.Kind != LocNone && out[j].Loc.Kind == LocNone })
	return out, err
}

// splitChildren returns the Readers of split units (none for a child).
func (r *Reader) splitChildren() []*Reader {
	if r.tag != 0 {
		return nil
	}
	return r.loadChildren()
}

func (r *Reader) globalsHere(name string) (out []*Variable, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, errPanic("find global", p)
		}
	}()
	r.indexNames()
	for _, off := range r.globals[name] {
		e, _, err := r.entryAt(off)
		if err != nil {
			continue
		}
		out = append(out, r.variable(e, r.unitOf(off)))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Loc.Kind != LocNone && out[j].Loc.Kind == LocNone })
	if len(out) == 0 {
		if r.namesErr != nil {
			return nil, r.namesErr
		}
		return nil, &Error{Op: "find global " + name, Err: ErrNotFound}
	}
	return out, nil
}

// TypesByName returns the named types (struct tags, typedefs, base types,
// enums...) called name. Complete definitions come before declarations.
func (r *Reader) TypesByName(name string) ([]*Type, error) {
	out, err := r.typesHere(name)
	for _, c := range r.splitChildren() {
		if ts, cerr := c.TypesByName(name); cerr == nil {
			out, err = append(out, ts...), nil
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return !out[i].Declaration && out[j].Declaration })
	return out, err
}

func (r *Reader) typesHere(name string) (out []*Type, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, errPanic("find type", p)
		}
	}()
	r.indexNames()
	for _, off := range r.typeNames[name] {
		t, err := r.typeAt(off, 0)
		if err == nil {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return !out[i].Declaration && out[j].Declaration })
	if len(out) == 0 {
		return nil, &Error{Op: "find type " + name, Err: ErrNotFound}
	}
	return out, nil
}

// indexEnumerators records the enumerators of the enum at off (rd is just
// past its DIE) and consumes its children: by their names in the enum's
// scope (prefix) and, for a named enum, through the enum (enumQ::name):
// a C++11 enum class's are named only so (Unit::Mega, found in the sixth
// real-program trial: a condition s.unit == Unit::Mega was "No symbol"),
// and C++11 names any enum's so.
func (r *Reader) indexEnumerators(rd *dieReader, prefix, enumQ string, off dwarf.Offset) {
	for n := 0; n < 1<<20; n++ {
		c, err := rd.Next()
		if err != nil || c == nil || c.Tag == 0 {
			return
		}
		if c.Children {
			rd.SkipChildren()
		}
		if name, _ := c.Val(dwarf.AttrName).(string); c.Tag == dwarf.TagEnumerator && name != "" {
			r.addName(r.enumNames, prefix, name, off)
			if enumQ != "" {
				q := enumQ + "::" + name
				r.enumNames[q] = append(r.enumNames[q], off)
			}
		}
	}
}

// Enumerator finds an enumeration constant by name: its enum type and value.
func (r *Reader) Enumerator(name string) (*Type, int64, error) {
	t, v, err := r.enumeratorHere(name)
	if err == nil {
		return t, v, nil
	}
	for _, c := range r.splitChildren() {
		if t, v, cerr := c.Enumerator(name); cerr == nil {
			return t, v, nil
		}
	}
	return nil, 0, err
}

func (r *Reader) enumeratorHere(name string) (t *Type, value int64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, errPanic("find enumerator", p)
		}
	}()
	r.indexNames()
	base := name
	if i := strings.LastIndex(name, "::"); i >= 0 {
		base = name[i+2:]
	}
	for _, off := range r.enumNames[name] {
		t, err := r.typeAt(off, 0)
		if err != nil {
			continue
		}
		for _, e := range t.Enumerators {
			if e.Name == base {
				return t, e.Value, nil
			}
		}
	}
	return nil, 0, &Error{Op: "find enumerator " + name, Err: ErrNotFound}
}

// Complete returns the definition of a struct, class, union or enum that t
// only declares (an opaque "struct foo;" or a declaration completed in
// another unit), found by name; t itself when it is complete or no
// definition exists.
func (r *Reader) Complete(t *Type) *Type {
	s := t.Strip()
	if s == nil || !s.Declaration || s.Name == "" {
		return t
	}
	ts, err := r.TypesByName(s.Name)
	if err != nil {
		return t
	}
	for _, c := range ts {
		if !c.Declaration && c.Kind == s.Kind {
			return c
		}
	}
	return t
}

// QualifiedName returns the name of type t with its namespaces and
// enclosing classes ("std::allocator<char>"), as gdb prints base classes;
// t's own name when it has no qualified one.
func (r *Reader) QualifiedName(t *Type) string {
	if t == nil {
		return ""
	}
	if t.Offset != 0 {
		if c, real, ok := r.child(t.Offset); ok {
			return c.QualifiedName(&Type{Offset: real, Name: t.Name})
		}
		r.mu.Lock()
		q, ok := r.qualifiedName(r.real(t.Offset))
		r.mu.Unlock()
		if ok {
			return q
		}
	}
	return t.Name
}

// qualifiedName is r.qualified[off], without building the index for it
// when it is not built (qualname.go), unless the walks for earlier names
// went through as many DIEs as the index reads. Callers hold r.mu.
func (r *Reader) qualifiedName(off dwarf.Offset) (q string, ok bool) {
	if r.globals == nil && r.qualWalked < uint64(len(r.info)+len(r.typesSec)) {
		if q, found, exact := r.qualifiedOf(off); exact {
			return q, found
		}
	}
	r.indexNames()
	q, ok = r.qualified[off]
	return q, ok
}

// NamesIndexed reports whether the name index (globals, types, enumerators)
// has been built, which reads every unit's DIEs: for tests and diagnostics
// of what a lookup cost.
func (r *Reader) NamesIndexed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.globals != nil
}
