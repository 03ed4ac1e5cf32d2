package variables

import (
	"debug/dwarf"
	"fmt"
	"sort"
	"strings"
)

// indexNames walks every compile unit once, recording global and static
// variables (outside functions) and named types by name; C++ names are
// recorded both plain and qualified by their namespaces. Callers hold r.mu.
func (r *Reader) indexNames() {
	r.namesOnce.Do(func() {
		r.globals = map[string][]dwarf.Offset{}
		r.typeNames = map[string][]dwarf.Offset{}
		r.enumNames = map[string][]dwarf.Offset{}
		rd := r.d.Reader()
		for _, u := range r.units {
			if u.unitType != utCompile && u.unitType != utType && u.unitType != 4 {
				continue
			}
			rd.Seek(dwarf.Offset(u.dataOff))
			cu, err := rd.Next()
			if err != nil || cu == nil || !cu.Children {
				continue
			}
			prefixes := []string{""}
			for len(prefixes) > 0 {
				e, err := rd.Next()
				if err != nil {
					r.namesErr = &Error{Op: "index names", Err: fmt.Errorf("%w: %v", ErrBadDWARF, err)}
					break
				}
				if e == nil {
					break
				}
				if e.Tag == 0 {
					prefixes = prefixes[:len(prefixes)-1]
					continue
				}
				prefix := prefixes[len(prefixes)-1]
				name, _ := e.Val(dwarf.AttrName).(string)
				switch e.Tag {
				case dwarf.TagNamespace:
					if e.Children {
						p := name
						if name == "" {
							p = prefix // anonymous namespace: members are visible unqualified
						} else if prefix != "" {
							p = prefix + "::" + name
						}
						prefixes = append(prefixes, p)
					}
					continue
				case dwarf.TagVariable:
					if name == "" {
						name = r.nameOf(e)
					}
					r.addName(r.globals, prefix, name, e.Offset)
				case dwarf.TagBaseType, dwarf.TagTypedef, dwarf.TagStructType, dwarf.TagClassType,
					dwarf.TagUnionType, dwarf.TagEnumerationType, dwarf.TagUnspecifiedType:
					if name != "" {
						r.addName(r.typeNames, prefix, name, e.Offset)
					}
					if e.Tag == dwarf.TagEnumerationType && e.Children {
						r.indexEnumerators(rd, prefix, e.Offset)
						continue
					}
				}
				if e.Children {
					rd.SkipChildren()
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
func (r *Reader) Globals(name string) (out []*Variable, err error) {
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
func (r *Reader) TypesByName(name string) (out []*Type, err error) {
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
// past its DIE) and consumes its children.
func (r *Reader) indexEnumerators(rd *dwarf.Reader, prefix string, off dwarf.Offset) {
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
		}
	}
}

// Enumerator finds an enumeration constant by name: its enum type and value.
func (r *Reader) Enumerator(name string) (t *Type, value int64, err error) {
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
