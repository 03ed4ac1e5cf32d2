package variables

import (
	"debug/dwarf"
	"strings"
)

// Scope names without the name index: gdb prints an enumerator of an enum
// declared in a class or namespace qualified (Plan::kWantToStart,
// geo::Mode::On for a scoped enum) and a Rust struct by its path
// (pp_rust::Point). The prefix comes from the type DIE's parents, which
// DWARF records only by nesting; so the one unit holding the type is
// walked once (namespaces and types, never function bodies) and the
// qualified name of every type nested in a namespace or type kept. This
// reads one unit, where QualifiedName's index reads them all.

// unitScopes are the scope names of one unit's types.
type unitScopes struct {
	// types: the qualified name of each named type inside a namespace or
	// another type.
	types map[dwarf.Offset]string
	// enums: the prefix an enumeration type's enumerators print with
	// ("Plan", "geo::Mode"), for enums that have one.
	enums map[dwarf.Offset]string
}

// maxScopeDepth bounds the nesting the walk follows (corrupt DWARF can
// nest without end).
const maxScopeDepth = 64

// ScopedName returns t's name qualified by the namespaces and types that
// enclose its DIE ("geo::Mode", "core::option::Option<u32>"), or its own
// name when nothing encloses it or it is not known.
func (r *Reader) ScopedName(t *Type) string {
	if t == nil {
		return ""
	}
	if q, ok := r.scopes(t.Offset, false); ok {
		return q
	}
	return t.Name
}

// enumeratorPrefix is the prefix enumerators of enum t print with ("" for
// none).
func (r *Reader) enumeratorPrefix(t *Type) string {
	q, _ := r.scopes(t.Offset, true)
	return q
}

// scopes looks the DIE at off up in its unit's scope names (enum: the
// enumerator prefix, else the qualified name).
func (r *Reader) scopes(off uint64, enum bool) (string, bool) {
	if r == nil || off == 0 {
		return "", false
	}
	if c, real, ok := r.child(off); ok {
		return c.scopes(real, enum)
	}
	die := r.real(off)
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.unitOf(die)
	if i < 0 {
		return "", false
	}
	us := r.scopeNames[i]
	if us == nil {
		us = r.walkScopes(i)
		if r.scopeNames == nil {
			r.scopeNames = map[int]*unitScopes{}
		}
		r.scopeNames[i] = us
	}
	if enum {
		q, ok := us.enums[die]
		return q, ok
	}
	q, ok := us.types[die]
	return q, ok
}

// walkScopes reads unit i's namespaces and types. Callers hold r.mu.
func (r *Reader) walkScopes(i int) *unitScopes {
	us := &unitScopes{types: map[dwarf.Offset]string{}, enums: map[dwarf.Offset]string{}}
	u := &r.units[i]
	rd := r.dieReader()
	rd.Seek(dwarf.Offset(u.dataOff))
	cu, err := rd.Next()
	for n := 0; err == nil && cu != nil && cu.Tag == 0 && n < 16; n++ {
		cu, err = rd.Next()
	}
	if err != nil || cu == nil || !cu.Children {
		return us
	}
	rust := false
	if l, ok := cu.Val(dwarf.AttrLanguage).(int64); ok && l == langRust {
		rust = true
	}
	stack := []string{""} // the prefix at each open level
	for steps := 0; len(stack) > 0 && steps < 1<<24; steps++ {
		e, err := rd.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		prefix := stack[len(stack)-1]
		name, _ := e.Val(dwarf.AttrName).(string)
		q := name
		if prefix != "" && name != "" {
			q = prefix + "::" + name
		}
		open := ""
		descend := false
		switch e.Tag {
		case dwarf.TagNamespace:
			if name == "" {
				// gdb's spelling of an anonymous namespace.
				q = "(anonymous namespace)"
				if prefix != "" {
					q = prefix + "::" + q
				}
			}
			open, descend = q, true
		case dwarf.TagStructType, dwarf.TagClassType, dwarf.TagUnionType, dwarf.TagEnumerationType,
			dwarf.TagTypedef, dwarf.TagBaseType, dwarf.TagUnspecifiedType:
			if name != "" && prefix != "" {
				us.types[e.Offset] = q
			}
			if e.Tag == dwarf.TagEnumerationType {
				// A scoped enum's (and every Rust enum's) enumerators are
				// named through the enum; an unscoped one's through the
				// enum's own scope.
				scoped, _ := e.Val(dwarf.AttrEnumClass).(bool)
				switch {
				case (scoped || rust) && name != "":
					us.enums[e.Offset] = q
				case prefix != "":
					us.enums[e.Offset] = prefix
				}
				break
			}
			if name != "" && e.Tag != dwarf.TagTypedef && e.Tag != dwarf.TagBaseType {
				open, descend = q, true
			}
		}
		if !e.Children {
			continue
		}
		if descend && len(stack) < maxScopeDepth {
			stack = append(stack, open)
		} else {
			rd.SkipChildren()
		}
	}
	return us
}

// langRust is DW_LANG_Rust.
const langRust = 0x1c

// isRust reports whether t was declared in a Rust unit (its DIE's, or
// for a type made up by a client, its element's).
func (r *Reader) isRust(t *Type) bool {
	for i := 0; t != nil && i < 8; i++ {
		if t.Offset != 0 {
			return r.unitLang(t.Offset) == langRust
		}
		t = t.Elem
	}
	return false
}

// unitLang is the DW_AT_language of the unit holding the DIE at off.
func (r *Reader) unitLang(off uint64) int64 {
	if r == nil {
		return 0
	}
	if c, real, ok := r.child(off); ok {
		return c.unitLang(real)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.unitOf(r.real(off))
	if i < 0 {
		return 0
	}
	return r.unitDIE(i).lang
}

// qualifiedEnumerator prefixes an enumerator's name as gdb prints it.
func qualifiedEnumerator(prefix, name string) string {
	if prefix == "" || strings.Contains(name, "::") {
		return name
	}
	return prefix + "::" + name
}

// DWARF's C++ language codes (DW_LANG_C_plus_plus, _03, _11, _14, _17, _20).
var cxxLangs = map[int64]bool{0x4: true, 0x19: true, 0x1a: true, 0x21: true, 0x2a: true, 0x2b: true}

// TypeString spells t as gdb's whatis does: the struct, class, union, enum
// and typedef names of a C++ unit qualified by their namespaces and
// classes, without C's keyword ("tinyxml2::XMLDocument * const", where
// String says "class XMLDocument * const"); other languages' types as
// String spells them.
func (r *Reader) TypeString(t *Type) string {
	if r == nil {
		return t.String()
	}
	return t.spell(func(n *Type) (string, bool) {
		if n.Offset == 0 || !cxxLangs[r.unitLang(n.Offset)] {
			return "", false
		}
		return r.ScopedName(n), true
	})
}
