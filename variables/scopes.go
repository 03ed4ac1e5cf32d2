package variables

import (
	"debug/dwarf"
	"sort"

	dw "github.com/sondedbg/sonde/dwarf"
)

// ScopeKind is what made a Scope.
type ScopeKind uint8

const (
	ScopeFunction ScopeKind = iota // a concrete (out-of-line) function
	ScopeBlock                     // a lexical block { ... }
	ScopeInlined                   // an inlined call of a function
)

// Scope is a function, a lexical block or an inlined call, with the
// variables declared directly in it. Scopes form a tree per function.
type Scope struct {
	Kind   ScopeKind
	Offset uint64
	Name   string      // the function's name (functions and inlined calls)
	Ranges [][2]uint64 // link-time code ranges; none: as the parent's
	Parent *Scope
	Vars   []*Variable // parameters and locals, in declaration order

	children  []*Scope
	frameBase *Location // functions: DW_AT_frame_base
	callSites []callSite
	unit      int
	r         *Reader // the Reader that decoded it (a split unit's, maybe)

	// paramsOnly: a function's tree without its locals (params.go).
	paramsOnly bool
}

// Contains reports whether pc is in s (a scope without ranges of its own
// covers what its parent covers).
func (s *Scope) Contains(pc uint64) bool {
	if len(s.Ranges) == 0 {
		return s.Parent == nil || s.Parent.Contains(pc)
	}
	for _, r := range s.Ranges {
		if pc >= r[0] && pc < r[1] {
			return true
		}
	}
	return false
}

// Function returns the concrete function s belongs to.
func (s *Scope) Function() *Scope {
	for s.Parent != nil {
		s = s.Parent
	}
	return s
}

// Variable is a parameter, a local or a global.
type Variable struct {
	Name       string
	Offset     uint64
	Type       *Type
	Param      bool
	Artificial bool // compiler-made (this, VLA bounds)
	External   bool // visible to other units
	Loc        Location
	DeclLine   int
	Scope      *Scope // nil for globals
	unit       int
	r          *Reader // the Reader that decoded it (a split unit's, maybe)
}

// callSite is a DW_TAG_call_site in a function: at return address ReturnPC,
// each parameter's register held the value of an expression in the caller.
type callSite struct {
	returnPC uint64
	params   []callSiteParam
	// What it calls: the DIE of the function (DW_AT_call_origin), or an
	// expression computing the address in the caller (DW_AT_call_target).
	origin dwarf.Offset
	target []byte
	tail   bool // DW_AT_call_tail_call: a jump, no return address
}

type callSiteParam struct {
	loc   []byte // DW_AT_location: the register (DW_OP_regN) the callee got it in
	value []byte // DW_AT_call_value: its value, as an expression in the caller
	// param is the callee's parameter DIE (DW_AT_call_parameter), for
	// parameters a clone receives nowhere (DW_OP_GNU_parameter_ref).
	param dwarf.Offset
}

// funcSpan maps code ranges of a unit to the subprogram covering them.
type funcSpan struct {
	lo, hi uint64
	off    dwarf.Offset
}

// ScopesAt returns the scopes that contain pc (link-time), innermost first:
// blocks and inlined calls, ending with the concrete function. No scopes and
// no error when no function's DWARF covers pc.
func (r *Reader) ScopesAt(pc uint64) (out []*Scope, err error) {
	return r.scopesAt(pc, false)
}

// scopesAt is ScopesAt, with only parameters decoded when paramsOnly
// (params.go).
func (r *Reader) scopesAt(pc uint64, paramsOnly bool) (out []*Scope, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paramsOnly = paramsOnly
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, errPanic("find scopes", p)
		}
	}()
	fn, err := r.functionAt(pc)
	if err != nil {
		return nil, err
	}
	if fn == nil {
		if c := r.childAt(pc); c != nil {
			r.mu.Unlock()
			defer r.mu.Lock()
			return c.scopesAt(pc, paramsOnly)
		}
		return nil, nil
	}
	s := fn
	for depth := 0; depth < 256; depth++ {
		var next *Scope
		for _, c := range s.children {
			if len(c.Ranges) > 0 && c.Contains(pc) {
				next = c
				break
			}
		}
		if next == nil {
			// Blocks without ranges of their own are transparent.
			for _, c := range s.children {
				if len(c.Ranges) == 0 {
					out = append(out, c)
				}
			}
			break
		}
		s = next
	}
	// Walk back up from the innermost scope.
	var chain []*Scope
	for x := s; x != nil; x = x.Parent {
		chain = append(chain, x)
	}
	return append(out, chain...), nil
}

// FrameScopes splits ScopesAt's chain into source-level frames, as a
// backtrace with inline frames shows them: inlineDepth 0 is the innermost
// inlined call (or the function itself when nothing is inlined at pc), and
// the result holds the scopes of that frame, innermost first.
func FrameScopes(chain []*Scope, inlineDepth int) []*Scope {
	depth := 0
	start := 0
	for i, s := range chain {
		if s.Kind == ScopeInlined || s.Kind == ScopeFunction {
			if depth == inlineDepth {
				return chain[start : i+1]
			}
			depth++
			start = i + 1
		}
	}
	return nil
}

// functionAt finds and decodes the function containing pc. Callers hold r.mu.
func (r *Reader) functionAt(pc uint64) (*Scope, error) {
	for _, ui := range r.unitsAtPC(pc) {
		spans := r.unitFuncs(ui)
		i := sort.Search(len(spans), func(i int) bool { return spans[i].lo > pc })
		for j := i - 1; j >= 0 && j >= i-8; j-- {
			if pc < spans[j].hi {
				return r.function(spans[j].off, ui)
			}
		}
		if fn, err := r.nestedFuncAt(pc, ui); fn != nil || err != nil {
			return fn, err
		}
	}
	return nil, nil
}

// unitFuncs indexes the subprograms with code of unit i, once. It reads
// the unit's DIEs undecoded (a C++ unit's thousands of declarations from
// libstdc++'s headers cost a first stop's scopes several ms decoded) and
// decodes only the subprograms that have an address or ranges.
func (r *Reader) unitFuncs(i int) []funcSpan {
	if r.funcIdx == nil {
		r.funcIdx = map[int][]funcSpan{}
	}
	if s, ok := r.funcIdx[i]; ok {
		return s
	}
	var spans []funcSpan
	rd := r.dieReader()
	rd.Seek(dwarf.Offset(r.units[i].dataOff))
	cu, err := rd.Next()
	if err == nil && cu != nil && cu.Children {
		ur := rd.ur
		var raw dw.Entry
		depth := 1
		for depth > 0 && !ur.Done() {
			if err := ur.Next(&raw); err != nil {
				break
			}
			if raw.Tag == 0 {
				depth--
				continue
			}
			switch raw.Tag {
			case dw.TagNamespace, dw.TagModule:
				if raw.Children {
					depth++
				}
				continue
			case dw.TagSubprogram:
				if raw.Field(dw.AttrLowPC) == nil && raw.Field(dw.AttrRanges) == nil {
					break // rangesOf has nothing to say of it
				}
				if rs, err := r.rangesOf(r.resolveDIE(i, &raw)); err == nil {
					for _, rg := range rs {
						if rg[1] > rg[0] && rg[0] != 0 {
							spans = append(spans, funcSpan{rg[0], rg[1], dwarf.Offset(r.units[i].base + raw.Offset)})
						}
					}
				}
			}
			if raw.Children {
				if err := ur.SkipChildren(&raw); err != nil {
					break
				}
			}
		}
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].lo < spans[b].lo })
	r.funcIdx[i] = spans
	return spans
}

// maxScopeVars bounds what one function's scope tree may hold.
const maxScopeVars = 1 << 16

// function decodes (once) the scope tree of the subprogram at off.
func (r *Reader) function(off dwarf.Offset, unit int) (*Scope, error) {
	if s, ok := r.funcs[off]; ok && (r.paramsOnly || !s.paramsOnly) {
		return s, nil
	}
	e, rd, err := r.entryAt(off)
	if err != nil {
		return nil, err
	}
	fn := &Scope{Kind: ScopeFunction, Offset: r.pub(off), unit: unit, r: r, paramsOnly: r.paramsOnly}
	fn.Ranges, _ = r.rangesOf(e)
	fn.Name = r.nameOf(e)
	if f := e.AttrField(dwarf.AttrFrameBase); f != nil {
		l := r.locationOf(f, unit)
		fn.frameBase = &l
	}
	r.funcs[off] = fn
	if !e.Children {
		return fn, nil
	}
	// Walk the subtree keeping the open DIEs with children: scopes, and nil
	// for other DIEs whose children are read (none today, but the end of
	// their children must still be matched).
	open := []*Scope{fn}
	count := 0
	// The abstract instances of the function and its inlined calls, and the
	// abstract DIEs their concrete variables stand for (see inherit).
	origins := map[*Scope]dwarf.Offset{}
	if o, ok := r.refOf(e, dwarf.AttrAbstractOrigin); ok {
		origins[fn] = o
	}
	concrete := map[dwarf.Offset]bool{}
	for len(open) > 0 {
		c, err := rd.Next()
		if err != nil {
			return fn, &Error{Op: "read function", Offset: uint64(off), Err: err}
		}
		if c == nil {
			break
		}
		if c.Tag == 0 {
			open = open[:len(open)-1]
			continue
		}
		if count++; count > maxScopeVars {
			return fn, bad("read function", uint64(off), "more than %d DIEs", maxScopeVars)
		}
		cur := fn
		for i := len(open) - 1; i >= 0; i-- {
			if open[i] != nil {
				cur = open[i]
				break
			}
		}
		switch c.Tag {
		case dwarf.TagLexDwarfBlock, dwarf.TagInlinedSubroutine:
			s := &Scope{Kind: ScopeBlock, Offset: r.pub(c.Offset), Parent: cur, unit: unit, r: r}
			if c.Tag == dwarf.TagInlinedSubroutine {
				s.Kind = ScopeInlined
				s.Name = r.nameOf(c)
			}
			s.Ranges, _ = r.rangesOf(c)
			if o, ok := r.refOf(c, dwarf.AttrAbstractOrigin); ok && c.Tag == dwarf.TagInlinedSubroutine {
				origins[s] = o
			}
			cur.children = append(cur.children, s)
			if c.Children {
				open = append(open, s)
			}
			continue
		case dwarf.TagFormalParameter, dwarf.TagVariable:
			if r.skipVar(c) {
				break
			}
			v := r.variable(c, unit)
			v.Scope = cur
			v.Param = c.Tag == dwarf.TagFormalParameter
			cur.Vars = append(cur.Vars, v)
			if o, ok := r.refOf(c, dwarf.AttrAbstractOrigin); ok {
				concrete[o] = true
			}
		case dwarf.TagCallSite, tagGNUCallSite:
			cs := callSite{}
			if v, ok := c.Val(dwarf.AttrCallReturnPC).(uint64); ok {
				cs.returnPC = v
			} else if v, ok := c.Val(dwarf.AttrLowpc).(uint64); ok {
				cs.returnPC = v // GNU call sites: low_pc is the return address
			}
			cs.tail, _ = c.Val(dwarf.AttrCallTailCall).(bool)
			if !cs.tail {
				cs.tail, _ = c.Val(attrGNUTailCall).(bool)
			}
			for _, a := range []dwarf.Attr{dwarf.AttrCallOrigin, dwarf.AttrAbstractOrigin} {
				if o, ok := c.Val(a).(dwarf.Offset); ok {
					cs.origin = o
					break
				}
			}
			for _, a := range []dwarf.Attr{dwarf.AttrCallTarget, attrGNUCallSiteTarget} {
				if t, ok := c.Val(a).([]byte); ok {
					cs.target = t
					break
				}
			}
			if c.Children {
				r.callSiteParams(rd, &cs)
			}
			fnScope := cur.Function()
			fnScope.callSites = append(fnScope.callSites, cs)
			continue
		}
		if c.Children {
			rd.SkipChildren()
		}
	}
	for sc, o := range origins {
		u := r.unitOf(o)
		if u < 0 {
			u = unit
		}
		r.inherit(sc, o, concrete, u)
	}
	return fn, nil
}

// inherit appends to scope sc the parameters and variables of its abstract
// instance (the DIE at origin) that no concrete DIE stands for, as gdb's
// inherit_abstract_dies does: a static local or a parameter the compiler
// dropped from a concrete instance is still the function's. Callers hold
// r.mu.
func (r *Reader) inherit(sc *Scope, origin dwarf.Offset, concrete map[dwarf.Offset]bool, unit int) {
	e, rd, err := r.entryAt(origin)
	if err != nil || !e.Children {
		return
	}
	for n := 0; n < maxScopeVars; n++ {
		c, err := rd.Next()
		if err != nil || c == nil || c.Tag == 0 {
			return
		}
		if (c.Tag == dwarf.TagFormalParameter || c.Tag == dwarf.TagVariable) && !concrete[c.Offset] && !r.skipVar(c) {
			v := r.variable(c, unit)
			v.Scope = sc
			sc.Vars = append(sc.Vars, v)
		}
		if c.Children {
			rd.SkipChildren()
		}
	}
}

// DW_TAG_GNU_call_site and its parameter, and their attributes (DWARF 4
// with GNU extensions).
const (
	tagGNUCallSite          dwarf.Tag  = 0x4109
	tagGNUCallSiteParameter dwarf.Tag  = 0x410a
	attrGNUCallSiteValue    dwarf.Attr = 0x2111
	attrGNUCallSiteTarget   dwarf.Attr = 0x2113
	attrGNUTailCall         dwarf.Attr = 0x2115
)

func (r *Reader) callSiteParams(rd *dieReader, cs *callSite) {
	for n := 0; n < 1024; n++ {
		p, err := rd.Next()
		if err != nil || p == nil || p.Tag == 0 {
			return
		}
		if p.Children {
			rd.SkipChildren()
		}
		if p.Tag != dwarf.TagCallSiteParameter && p.Tag != tagGNUCallSiteParameter {
			continue
		}
		loc, _ := p.Val(dwarf.AttrLocation).([]byte)
		val, ok := p.Val(dwarf.AttrCallValue).([]byte)
		if !ok {
			val, _ = p.Val(attrGNUCallSiteValue).([]byte)
		}
		param, _ := p.Val(dwarf.AttrCallParameter).(dwarf.Offset)
		if param == 0 {
			param, _ = p.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
		}
		if (loc != nil || param != 0) && val != nil {
			cs.params = append(cs.params, callSiteParam{loc: loc, value: val, param: param})
		}
	}
}

// variable decodes a variable or parameter DIE, taking name and type from
// its abstract origin or specification when it has none itself.
func (r *Reader) variable(e *entry, unit int) *Variable {
	v := &Variable{Offset: r.pub(e.Offset), unit: unit, Param: e.Tag == dwarf.TagFormalParameter, r: r}
	v.Name = r.nameOf(e)
	v.Artificial, _ = r.follow(e, dwarf.AttrArtificial).(bool)
	v.External, _ = r.follow(e, dwarf.AttrExternal).(bool)
	if l, ok := r.follow(e, dwarf.AttrDeclLine).(int64); ok {
		v.DeclLine = int(l)
	}
	if te := r.followEntry(e, dwarf.AttrType); te != nil {
		v.Type, _ = r.typeOf(te, 0)
	}
	if f := e.AttrField(dwarf.AttrLocation); f != nil {
		v.Loc = r.locationOf(f, unit)
	} else if f := e.AttrField(dwarf.AttrConstValue); f != nil {
		v.Loc = constLocation(f, v.Type)
	} else {
		v.Loc = Location{Kind: LocNone}
	}
	return v
}

// nameOf returns the DW_AT_name of e or of what it is an instance of.
func (r *Reader) nameOf(e *entry) string {
	s, _ := r.follow(e, dwarf.AttrName).(string)
	return s
}

// follow returns attribute a of e, or of e's abstract origin or
// specification (a few hops at most).
func (r *Reader) follow(e *entry, a dwarf.Attr) any {
	if x := r.followEntry(e, a); x != nil {
		return x.Val(a)
	}
	return nil
}

// followEntry returns the entry among e and its origins that has attribute a.
func (r *Reader) followEntry(e *entry, a dwarf.Attr) *entry {
	if e == nil {
		return nil
	}
	if x, _, ok := dw.FollowOrigins(e, 0, r.originEntry, func(x *entry) bool { return x.AttrField(a) != nil }); ok {
		return x
	}
	return nil
}

// originEntry returns the entry e's DW_AT_abstract_origin (or else its
// DW_AT_specification) refers to.
func (r *Reader) originEntry(e *entry) (*entry, bool) {
	off, ok := r.refOf(e, dwarf.AttrAbstractOrigin)
	if !ok {
		off, ok = r.refOf(e, dwarf.AttrSpecification)
	}
	if !ok {
		return nil, false
	}
	x, _, _ := r.entryAt(off)
	return x, x != nil
}
