package variables

import (
	"debug/dwarf"
	"strings"

	dw "github.com/sondedbg/sonde/dwarf"
)

// The qualified name of one type ("std::allocator<char>", printed for a
// base class) is what indexNames records for it: its namespaces and
// enclosing classes, or those of the declaration it completes. Building
// that index walks every DIE of every unit (8 ms for a small C++ program's
// one unit of libstdc++ headers, the first value shown with a base class
// paid it). Only the DIE's ancestors decide its name, so qualifiedOf walks
// from its unit's root down to it: at each level the children before it are
// skipped by their DW_AT_sibling (or their forms), undecoded; only the
// ancestors, and the declarations their DW_AT_specification names, are
// read. The answer is the index's: the same walk rules (which DIEs the index
// descends into, how a specification renames), and a specification is
// followed only where the index's walk would have met it before.

// maxQualHops bounds the specifications followed from one DIE (each may
// name a declaration inside a class that completes another...); past it
// the whole index answers.
const maxQualHops = 8

// qualStyle is how a walk spells the scopes it goes through. The index
// (and C++ name lookup) leaves an anonymous namespace out of its members'
// names; gdb prints it ("geo::(anonymous namespace)::N1", qualify.go).
type qualStyle uint8

const (
	indexStyle qualStyle = iota
	gdbStyle
)

// qualName is what the walk knows of one DIE: whether indexNames reads it
// at all (visited), the level it is read at, and its entry.
type qualName struct {
	visited bool
	lvl     nameLevel
	e       *entry
}

// nameLevel is one level of indexNames' walk: the prefix of the DIEs read
// there and whether they are members of a class.
type nameLevel struct {
	prefix  string
	inClass bool
}

// qualified is what the walk down to one DIE tells of its name.
type qualified struct {
	tag       dwarf.Tag // 0 when the walk does not read the DIE
	named     bool      // the DIE (or the declaration it completes) has a name
	enumClass bool      // DW_AT_enum_class
	prefix, q string    // the prefix of its qualified name, and that name
}

// recorded reports whether the index records a qualified name for the DIE
// (in r.qualified); base types counted too when withBase.
func (n qualified) recorded(withBase bool) bool {
	switch n.tag {
	case dwarf.TagTypedef, dwarf.TagStructType, dwarf.TagClassType, dwarf.TagUnionType,
		dwarf.TagEnumerationType, dwarf.TagUnspecifiedType:
	case dwarf.TagBaseType:
		if !withBase {
			return false
		}
	default:
		return false
	}
	return n.named && n.prefix != ""
}

// qualKey keys the walks' answers: a DIE and the style it was named in.
type qualKey struct {
	off   dwarf.Offset
	style qualStyle
}

// qualifiedOf returns what indexNames records in r.qualified for the DIE at
// off: its qualified name and true, or false when it records none. exact is
// false when the walk cannot tell (malformed DWARF, too many hops) and the
// index must answer. Callers hold r.mu.
func (r *Reader) qualifiedOf(off dwarf.Offset) (q string, found, exact bool) {
	n, exact := r.qualify(off, indexStyle)
	if !exact || !n.recorded(false) {
		return "", false, exact
	}
	return n.q, true, true
}

// qualify walks down to the DIE at off and names it in style s, memoized.
// exact is false when the walk cannot tell. Callers hold r.mu.
func (r *Reader) qualify(off dwarf.Offset, s qualStyle) (n qualified, exact bool) {
	if m, ok := r.qualMemo[qualKey{off, s}]; ok {
		return m, true
	}
	at, ok := r.walkTo(off, 0, s)
	if !ok {
		return n, false
	}
	if at.visited {
		name, prefix, q, ok := r.nameAt(at, 0, s)
		if !ok {
			return n, false
		}
		scoped, _ := at.e.Val(dwarf.AttrEnumClass).(bool)
		n = qualified{tag: at.e.Tag, named: name != "", enumClass: scoped, prefix: prefix, q: q}
	}
	if r.qualMemo == nil {
		r.qualMemo = map[qualKey]qualified{}
	}
	r.qualMemo[qualKey{off, s}] = n
	return n, true
}

// nameAt applies indexNames' naming to the DIE at: its name, the prefix of
// its qualified name, and that name (q). hops counts the specifications
// followed so far.
func (r *Reader) nameAt(at qualName, hops int, s qualStyle) (name, prefix, q string, ok bool) {
	e := at.e
	name, _ = e.Val(dwarf.AttrName).(string)
	prefix = at.lvl.prefix
	if spec, has := r.refOf(e, dwarf.AttrSpecification); has {
		sq, recorded, ok := r.qualEntry(spec, e.Offset, hops+1, s)
		if !ok {
			return "", "", "", false
		}
		if recorded {
			if i := strings.LastIndex(sq, "::"); i >= 0 {
				prefix, name = sq[:i], sq[i+2:]
			} else {
				name = sq
			}
		} else if name == "" {
			name = r.nameOf(e)
		}
	}
	q = name
	if prefix != "" && name != "" {
		q = prefix + "::" + name
	}
	return name, prefix, q, true
}

// qualEntry returns what indexNames' map of names in namespaces and
// classes (qual) holds for the DIE at off when its walk reads the DIE at
// before: the walk reads DIEs in offset order, so a DIE at or after before
// is not there yet.
func (r *Reader) qualEntry(off, before dwarf.Offset, hops int, s qualStyle) (q string, recorded, ok bool) {
	if off >= before {
		return "", false, true
	}
	if hops > maxQualHops {
		return "", false, false
	}
	at, ok := r.walkTo(off, hops, s)
	if !ok || !at.visited {
		return "", false, ok
	}
	name, _, q, ok := r.nameAt(at, hops, s)
	if !ok {
		return "", false, false
	}
	return q, name != "" && (at.lvl.prefix != "" || at.e.Tag == dwarf.TagNamespace), true
}

// walkTo walks the unit holding off as indexNames does, down to the DIE at
// off, skipping the subtrees that do not hold it, naming scopes in style s.
// ok is false when the DWARF stops the walk (the index then answers).
func (r *Reader) walkTo(off dwarf.Offset, hops int, s qualStyle) (at qualName, ok bool) {
	ui := r.unitOf(off)
	if ui < 0 {
		return at, true
	}
	u := &r.units[ui]
	if u.unitType != utCompile && u.unitType != utType && u.unitType != 5 {
		return at, true // indexNames reads no DIE of these units
	}
	rd := r.dieReader()
	rd.Seek(dwarf.Offset(u.dataOff))
	cu, err := rd.Next()
	for n := 0; err == nil && cu != nil && cu.Tag == 0 && n < 16; n++ {
		cu, err = rd.Next()
	}
	if err != nil {
		return at, false
	}
	if cu == nil || !cu.Children || off <= cu.Offset {
		return at, true
	}
	ur := rd.ur
	if s == indexStyle {
		defer func() { r.qualWalked += ur.Offset() - u.hdr.DataOffset }()
	}
	target := uint64(off) - u.base
	stack := []nameLevel{{}}
	var raw dw.Entry
	for len(stack) > 0 {
		if ur.Done() || ur.Offset() > target {
			return at, true // off is no DIE the walk reads
		}
		if err := ur.Next(&raw); err != nil {
			return at, false
		}
		if raw.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		top := stack[len(stack)-1]
		if raw.Offset == target {
			return qualName{visited: true, lvl: top, e: r.resolveDIE(ui, &raw)}, true
		}
		if !raw.Children {
			continue
		}
		after := ur.Offset()
		if err := ur.SkipChildren(&raw); err != nil {
			return at, false
		}
		if ur.Offset() <= target {
			continue // off is past this subtree
		}
		// off is inside: go down where indexNames goes down.
		e := r.resolveDIE(ui, &raw)
		switch e.Tag {
		case dwarf.TagNamespace:
			name, prefix, q, ok := r.nameAt(qualName{visited: true, lvl: top, e: e}, hops, s)
			if !ok {
				return at, false
			}
			if name == "" {
				q = anonymousNamespace(prefix, s)
			}
			stack = append(stack, nameLevel{prefix: q})
		case dwarf.TagStructType, dwarf.TagClassType, dwarf.TagUnionType, dwarf.TagUnspecifiedType:
			name, _, q, ok := r.nameAt(qualName{visited: true, lvl: top, e: e}, hops, s)
			if !ok {
				return at, false
			}
			if name == "" {
				return at, true
			}
			stack = append(stack, nameLevel{prefix: q, inClass: true})
		default:
			return at, true // functions, enums, typedefs...: the index does not go in
		}
		if err := ur.Seek(after); err != nil {
			return at, false
		}
	}
	return at, true
}

// anonymousNamespace is the prefix of an anonymous namespace's members
// inside prefix: prefix itself for the index (they are visible
// unqualified), gdb's "(anonymous namespace)" after it for gdb.
func anonymousNamespace(prefix string, s qualStyle) string {
	if s == indexStyle {
		return prefix
	}
	if prefix == "" {
		return "(anonymous namespace)"
	}
	return prefix + "::(anonymous namespace)"
}
