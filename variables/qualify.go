package variables

import (
	"debug/dwarf"
	"strings"
)

// Scope names without the name index: gdb prints an enumerator of an enum
// declared in a class or namespace qualified (Plan::kWantToStart,
// geo::Mode::On for a scoped enum) and a Rust struct by its path
// (pp_rust::Point). The prefix comes from the type DIE's parents, which
// DWARF records only by nesting: QualifiedName's walk down to the DIE
// (qualname.go) finds it, spelling anonymous namespaces as gdb does. This
// reads one unit's path to the DIE, where the name index reads them all.

// ScopedName returns t's name qualified by the namespaces and types that
// enclose its DIE ("geo::Mode", "core::option::Option<u32>"), or its own
// name when nothing encloses it or it is not known.
func (r *Reader) ScopedName(t *Type) string {
	if t == nil {
		return ""
	}
	if n, ok := r.scoped(t.Offset); ok && n.recorded(true) {
		return n.q
	}
	return t.Name
}

// enumeratorPrefix is the prefix enumerators of enum t print with ("" for
// none): a scoped enum's (and every Rust enum's) enumerators are named
// through the enum, an unscoped one's through the enum's own scope.
func (r *Reader) enumeratorPrefix(t *Type) string {
	n, ok := r.scoped(t.Offset)
	if !ok || n.tag != dwarf.TagEnumerationType {
		return ""
	}
	if n.named && (n.enumClass || r.unitLang(t.Offset) == langRust) {
		return n.q
	}
	return n.prefix
}

// scoped names the DIE at off as gdb does, from the walk down to it in
// its unit.
func (r *Reader) scoped(off uint64) (qualified, bool) {
	if r == nil || off == 0 {
		return qualified{}, false
	}
	if c, real, ok := r.child(off); ok {
		return c.scoped(real)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.qualify(r.real(off), gdbStyle)
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
	if r.isRust(t) {
		if s, ok := r.rustFnString(t); ok {
			return s
		}
	}
	return t.spell(func(n *Type) (string, bool) {
		if n.Offset == 0 || !cxxLangs[r.unitLang(n.Offset)] {
			return "", false
		}
		return r.ScopedName(n), true
	})
}
