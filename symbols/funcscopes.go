package symbols

// A debugger's first stop symbolizes a dozen frames, one or two of them in
// each of several large units (Rust's std is one unit of 800 KB of DIEs
// with 20,000 functions and inlined calls). Building a whole unit's scope
// tree for one frame was most of a first `stackTrace`. A large unit is
// instead indexed by its functions first - one walk like buildScopes', but
// that records each function outside functions by its ranges and skips its
// body - and a lookup decodes the subtree of the one function covering pc
// (its inlined calls, blocks and nested declarations) with buildScopes' own
// walk and naming. The answer is the whole tree's: where it might not be (pc
// covered by two functions, a name that needs a declaration inside another
// function's body, a DIE that cannot be read), the lookup falls back to the
// whole tree, as it does once a unit has had many functions decoded.

import (
	"cmp"
	"slices"
	"sync"

	"github.com/sondedbg/sonde/dwarf"
)

// funcScopesMinSize is the size of DIEs from which a unit is decoded one
// function at a time (smaller ones are decoded whole: cheap, and their
// address map is then one search); a variable for tests.
var funcScopesMinSize uint64 = 16 << 10

// funcScopesMaxTrees is how many functions of a unit are decoded one by one
// before the whole unit is decoded instead (a profile or a cold batch of
// lookups in one unit: one walk then costs less than many); a variable for tests.
var funcScopesMaxTrees = 16

// funcScopesFileTrees is how many functions a file decodes one at a time
// before its units not indexed yet are decoded whole: a debugger's stops
// decode a few dozen; a batch of lookups (symbolizing a profile) reaches
// every unit many times, and is better served by whole units at once.
var funcScopesFileTrees int32 = 64

// funcScopes is a unit's function index and the functions decoded so far.
type funcScopes struct {
	decls  *declIndex    // declarations outside function bodies
	funcs  []funcEntry   // functions outside functions, in DIE order
	ranges []dwarf.Range // funcs[i]'s ranges are ranges[r0:r1]
	bodies []bodySpan    // the functions' children, sorted
	seg    segmentMap    // address -> funcs index; -1 none, ambiguousFunc

	mu    sync.Mutex
	trees map[int32]*scopeTree     // decoded functions; nil value: fall back
	calls map[int32]*unitCallSites // their call sites (callsite.go)
}

// ambiguousFunc marks addresses covered by more than one function.
const ambiguousFunc = -2

type funcEntry struct {
	off    uint64 // DIE offset
	prefix int32  // in decls.prefixes
	r0, r1 int32
	body   bodySpan
}

// bodySpan is the section offsets [lo, hi) of a DIE's children.
type bodySpan struct{ lo, hi uint64 }

func (s bodySpan) holds(off uint64) bool { return off >= s.lo && off < s.hi }

// funcIndexBuild is what the index walk records besides declarations.
type funcIndexBuild = funcScopes

// add records a function with code met outside functions and skips its
// children; ok false leaves a function without code to buildScopes' rules.
func (x *funcScopes) add(b *scopeBuild, ur *dwarf.UnitReader, e *dwarf.Entry, top scopeLevel) (ok bool, err error) {
	rs, err := b.cu.rangesOf(e, b.rs[:0])
	b.rs = rs
	if err != nil || len(rs) == 0 {
		return false, nil // function() reports the error and the walk fails
	}
	f := funcEntry{off: e.Offset, prefix: top.prefix, r0: int32(len(x.ranges))}
	x.ranges = append(x.ranges, rs...)
	f.r1 = int32(len(x.ranges))
	if e.Children {
		f.body.lo = ur.Offset()
		if err := ur.SkipChildren(e); err != nil {
			return false, b.cu.fail("skip DIE children", err)
		}
		f.body.hi = ur.Offset()
		x.bodies = append(x.bodies, f.body)
	}
	x.funcs = append(x.funcs, f)
	return true, nil
}

// inBody reports whether off lies in the children of an indexed function.
func (x *funcScopes) inBody(off uint64) bool {
	i, _ := slices.BinarySearchFunc(x.bodies, off, func(s bodySpan, off uint64) int { return cmp.Compare(s.lo, off) })
	// bodies[i-1] is the last starting at or before off (or bodies[i] when it starts at off).
	if i < len(x.bodies) && x.bodies[i].lo == off {
		return true
	}
	return i > 0 && x.bodies[i-1].holds(off)
}

// funcScopes returns the unit's function index, built on first use; nil for
// a small unit or one whose walk failed (the whole tree then answers).
func (cu *compUnit) funcScopes() *funcScopes {
	cu.funcsOnce.Do(func() {
		if cu.hdr.End > cu.hdr.DataOffset && cu.hdr.End-cu.hdr.DataOffset >= funcScopesMinSize &&
			cu.file.funcTrees.Load() < funcScopesFileTrees {
			if x := cu.buildFuncScopes(); x != nil {
				cu.funcs.Store(x)
			}
		}
	})
	return cu.funcs.Load()
}

func (cu *compUnit) buildFuncScopes() *funcScopes {
	if err := cu.readUnitDIE(); err != nil {
		return nil
	}
	ur, err := cu.reader()
	if err != nil {
		return nil
	}
	x := &funcScopes{trees: map[int32]*scopeTree{}}
	// Presized from the unit's size (Rust's std: a function outside
	// functions per 670 bytes of DIEs, a declaration per 85).
	size := cu.hdr.End - cu.hdr.DataOffset
	x.funcs = make([]funcEntry, 0, min(size/512, 1<<16))
	x.ranges = make([]dwarf.Range, 0, min(size/512, 1<<16))
	b := &scopeBuild{cu: cu, t: &scopeTree{}, decls: newDeclIndex(cu, int(min(size/64, 1<<20))), index: x}
	var e dwarf.Entry
	if err := ur.Next(&e); err != nil {
		return nil
	}
	if e.Children {
		if err := b.walk(ur, &e, scopeLevel{node: -1}, false); err != nil {
			return nil
		}
	}
	b.decls.finish()
	x.decls = b.decls
	slices.SortFunc(x.bodies, func(a, b bodySpan) int { return cmp.Compare(a.lo, b.lo) })
	x.seg = x.segments()
	return x
}

// segments maps addresses to the function covering them, and those covered
// by two or more (aliases, damaged ranges) to ambiguousFunc: which node the
// whole tree gives there depends on all of them.
func (x *funcScopes) segments() segmentMap {
	spans := make([]span, 0, len(x.ranges)+8)
	for i, f := range x.funcs {
		for _, r := range x.ranges[f.r0:f.r1] {
			if usableRange(r.Lo, r.Hi) {
				spans = append(spans, span{r.Lo, r.Hi, int32(i), 0})
			}
		}
	}
	sorted := slices.Clone(spans)
	slices.SortFunc(sorted, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	var maxHi uint64
	for i, s := range sorted {
		if i > 0 && s.lo < maxHi {
			spans = append(spans, span{s.lo, min(s.hi, maxHi), ambiguousFunc, 1})
		}
		maxHi = max(maxHi, s.hi)
	}
	return buildSegments(spans)
}

// tree returns the scope tree of function i alone (node 0 is the function),
// decoding it on first use; nil when the whole unit's tree must answer.
func (x *funcScopes) tree(cu *compUnit, i int32) *scopeTree {
	x.mu.Lock()
	defer x.mu.Unlock()
	if t, ok := x.trees[i]; ok {
		return t
	}
	if len(x.trees) >= funcScopesMaxTrees {
		return nil
	}
	t := x.decode(cu, i)
	x.trees[i] = t
	cu.file.funcTrees.Add(1)
	return t
}

// decoded returns function i's tree if it is decoded, without decoding.
func (x *funcScopes) decoded(i int32) (*scopeTree, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	t, ok := x.trees[i]
	return t, ok && t != nil
}

func (x *funcScopes) decode(cu *compUnit, i int32) *scopeTree {
	f := x.funcs[i]
	ur, err := cu.reader()
	if err != nil || ur.Seek(f.off) != nil {
		return nil
	}
	decls := &declIndex{cu: cu, prefixes: slices.Clip(x.decls.prefixes), outer: x, body: f.body}
	b := &scopeBuild{cu: cu, t: &scopeTree{}, decls: decls}
	var e dwarf.Entry
	if err := b.walk(ur, &e, scopeLevel{node: -1, prefix: f.prefix}, true); err != nil {
		return nil
	}
	if len(b.t.nodes) == 0 || b.t.nodes[0].declOff != f.off {
		return nil
	}
	b.name()
	if decls.outerMiss {
		return nil
	}
	b.t.seg = b.segments()
	return b.t
}

// funcTreeAt returns the decoded tree of the function covering pc, decoding
// it when decode is set; nil when the whole tree must answer (or, without
// decode, when the function is not decoded yet).
func (cu *compUnit) funcTreeAt(pc uint64, decode bool) *scopeTree {
	x := cu.funcs.Load()
	if decode {
		x = cu.funcScopes()
	}
	if x == nil {
		return nil
	}
	i := x.seg.find(pc)
	if i < 0 {
		return nil
	}
	if !decode {
		t, _ := x.decoded(i)
		return t
	}
	return x.tree(cu, i)
}

// callSitesOfFunction returns the call sites of the function covering pc
// in a unit decoded one function at a time (read from its subtree alone),
// else those of the whole unit (callSitesAt).
func (d *dwarfFile) callSitesOfFunction(pc uint64) (*unitCallSites, error) {
	cu := d.unitAt(pc)
	if cu == nil {
		return nil, nil
	}
	if du, err := cu.dieUnit(); err == nil && du != nil {
		if x := du.funcScopes(); x != nil {
			if i := x.seg.find(pc); i >= 0 {
				if cs := x.callSites(du, i); cs != nil {
					return cs, cs.err
				}
			}
		}
	}
	return d.callSitesAt(pc)
}

// callSites returns the call sites of function i, read on first use; nil
// when the whole unit's must answer.
func (x *funcScopes) callSites(cu *compUnit, i int32) *unitCallSites {
	x.mu.Lock()
	defer x.mu.Unlock()
	if cs, ok := x.calls[i]; ok {
		return cs
	}
	if len(x.calls) >= funcScopesMaxTrees {
		return nil
	}
	var cs *unitCallSites
	if ur, err := cu.reader(); err == nil && ur.Seek(x.funcs[i].off) == nil {
		cs = &unitCallSites{}
		cu.walkCallSites(ur, cs, true)
	}
	if x.calls == nil {
		x.calls = map[int32]*unitCallSites{}
	}
	x.calls[i] = cs
	return cs
}
