package symbols

import (
	"slices"
	"sort"
	"sync"

	"github.com/sondedbg/sonde/dwarf"
)

// scopeTree is a unit's functions and inlined calls: one node per concrete
// subprogram (depth 0) or DW_TAG_inlined_subroutine (depth > 0), and a map
// from each address to the innermost node that covers it.
type scopeTree struct {
	nodes  []scopeNode
	ranges []dwarf.Range // node i's ranges are ranges[nodes[i].r0:nodes[i].r1]
	seg    segmentMap
	vars   []globalVar // variables with a static address, outside functions
	// mains are the nodes of functions marked DW_AT_main_subprogram (the
	// program's main in Rust and Fortran, where the ELF main is a shim).
	mains []int32
}

// globalVar is a variable with a fixed address (DW_OP_addr location).
type globalVar struct {
	name    *fnName
	addr    uint64
	declOff uint64
}

type scopeNode struct {
	parent   int32 // -1 for functions
	depth    int32
	r0, r1   int32
	name     *fnName
	callFile uint32 // call site of an inlined node, in the unit's line table files
	callLine uint32
	callCol  uint32
	declOff  uint64 // DIE offset (for diagnostics and reverse lookups)
}

// fnName is a function's name, shared by all its concrete and inlined copies.
type fnName struct {
	raw     string // DW_AT_name
	prefix  string // enclosing namespaces and classes from DIE parents, "a::B"
	linkage string // DW_AT_linkage_name (mangled)
	// names is where the file keeps demangled names across runs, or nil.
	names *nameStore

	// declLine is where the function's definition starts (DW_AT_decl_line
	// of the first DIE on the way to its name that has one), 0 unknown.
	declLine int

	once    sync.Once
	display string
	fortran bool // a Fortran procedure: gdb shows its DWARF name (fortran.go)
}

// Display returns the name as gdb shows it: the linkage name when there is
// one (demangled, without return type), else the DWARF name qualified by
// its enclosing scopes.
func (n *fnName) Display() string {
	if n == nil {
		return ""
	}
	n.once.Do(func() {
		if n.linkage != "" && !(n.fortran && n.raw != "") {
			// gdb shows a linkage name that is not mangled (a C function
			// renamed by an asm label, like glibc's __GI_ aliases) as is.
			n.display = n.linkage
			if r := n.names.demangled(n.linkage); r.ok {
				n.display = r.display
			}
			return
		}
		switch {
		case n.raw == "":
			n.display = n.linkage
		case n.prefix != "":
			n.display = n.prefix + "::" + n.raw
		default:
			n.display = n.raw
		}
	})
	return n.display
}

// declInfo is what a DIE contributes to a function's name; strings stay
// undecoded until a name is needed. It holds no pointers (the prefix is an
// index into the walk's table of prefixes), so the tens of thousands a large
// C++ unit has are neither scanned nor cleared by the garbage collector.
type declInfo struct {
	name, linkage dwarf.Field
	ref           dwarf.Field // DW_AT_abstract_origin or DW_AT_specification
	prefix        int32       // declIndex.prefixes[prefix]
	line          uint32      // DW_AT_decl_line, 0 when absent
}

// attrDeclLine is DW_AT_decl_line.
const attrDeclLine = 0x3b

func (cu *compUnit) declOf(e *dwarf.Entry, prefix int32) declInfo {
	di := declInfo{prefix: prefix}
	for _, f := range e.Fields {
		switch f.Attr {
		case dwarf.AttrName:
			di.name = f
		case dwarf.AttrLinkageName, dwarf.AttrMIPSLinkageName:
			di.linkage = f
		case attrDeclLine:
			// DWARF 5 writes it as an implicit_const (signed) too.
			if (f.Class == dwarf.ClassConst || f.Class == dwarf.ClassSConst) && f.Val < 1<<31 {
				di.line = uint32(f.Val)
			}
		case dwarf.AttrAbstractOrigin, dwarf.AttrSpecification:
			if di.ref.Class == dwarf.ClassNone {
				di.ref = f
			}
		}
	}
	return di
}

// fillName completes n from di and the DIEs it refers to (abstract origin,
// specification), following at most dwarf.MaxOriginHops links (hops of
// them were followed to reach di): names and the declaration line come
// from the first DIE that has them (an out-of-class C++ definition has its
// own line, its class's declaration another). The unit's declarations
// (decls) are followed first; a link out of them is resolved through the
// file (or its supplementary file), once.
func (cu *compUnit) fillName(n *fnName, di declInfo, decls *declIndex, hops int) {
	named := false
	last, hops, done := dwarf.FollowOrigins(di, hops, func(d declInfo) (declInfo, bool) {
		if d.ref.Class != dwarf.ClassRef {
			return d, false
		}
		return decls.get(d.ref.Val)
	}, func(d declInfo) bool {
		cu.takeName(n, d, decls)
		named = n.raw != "" && n.linkage != ""
		return named && (n.declLine != 0 || d.ref.Class != dwarf.ClassRef)
	})
	if done || hops >= dwarf.MaxOriginHops {
		return
	}
	var other *fnName
	switch last.ref.Class {
	case dwarf.ClassRef:
		if named {
			return // not worth decoding another DIE for the line alone
		}
		other, _ = cu.file.nameAt(last.ref.Val, hops+1)
	case dwarf.ClassRefAlt:
		if cu.file.alt != nil {
			other, _ = cu.file.alt.nameAt(last.ref.Val, hops+1)
		}
	}
	if other != nil {
		if n.linkage == "" {
			n.linkage = other.linkage
		}
		if n.raw == "" {
			n.raw, n.prefix = other.raw, other.prefix
		}
		if n.declLine == 0 {
			n.declLine = other.declLine
		}
	}
}

// takeName fills what n lacks of its names and declaration line from di.
func (cu *compUnit) takeName(n *fnName, di declInfo, decls *declIndex) {
	if n.declLine == 0 {
		n.declLine = int(di.line)
	}
	if n.linkage == "" && di.linkage.Class != dwarf.ClassNone {
		n.linkage, _ = cu.str(&di.linkage)
		n.fortran = cu.fortran()
	}
	if n.raw == "" && di.name.Class != dwarf.ClassNone {
		n.raw, _ = cu.str(&di.name)
		n.prefix = decls.prefixOf(di.prefix)
	}
}

// scopeTree returns the scope tree of the unit, decoding it on first use.
func (cu *compUnit) scopeTree() (*scopeTree, error) {
	cu.scopesOnce.Do(func() { cu.scopes, cu.scopesErr = cu.buildScopes() })
	return cu.scopes, cu.scopesErr
}

// scopeBuild is buildScopes' state: the tree being built and, parallel to
// its nodes and variables, the DIEs that name them.
type scopeBuild struct {
	cu        *compUnit
	t         *scopeTree
	decls     *declIndex    // declarations and abstract instances, by offset
	nodeDecls []declInfo    // parallel to t.nodes
	varDecls  []declInfo    // parallel to t.vars
	rs        []dwarf.Range // scratch
	index     *funcIndexBuild
}

// scopeLevel is one open DIE of the walk: the innermost node and the
// qualified-name prefix of its children.
type scopeLevel struct {
	node   int32
	prefix int32 // in decls.prefixes
}

// buildScopes walks the unit's DIEs once. It descends into functions, lexical
// blocks, namespaces and classes, and skips every other subtree.
func (cu *compUnit) buildScopes() (*scopeTree, error) {
	if err := cu.readUnitDIE(); err != nil {
		return nil, err
	}
	ur, err := cu.reader()
	if err != nil {
		return nil, err
	}
	// Presize from the unit's size: growing these slices one doubling at a
	// time costs more than decoding the DIEs in a large C++ unit (one
	// function or inlined call per ~64 bytes of DIEs there). C units have
	// fewer; the unused capacity of a large allocation is address space
	// the program never touches, not memory.
	guess := 0
	if cu.hdr.End > cu.hdr.DataOffset {
		guess = int(min((cu.hdr.End-cu.hdr.DataOffset)/64, 1<<20))
	}
	b := &scopeBuild{cu: cu, t: &scopeTree{
		nodes:  make([]scopeNode, 0, guess),
		ranges: make([]dwarf.Range, 0, guess),
	}, decls: newDeclIndex(cu, guess/3), nodeDecls: make([]declInfo, 0, guess)}
	var e dwarf.Entry
	if err := ur.Next(&e); err != nil {
		return nil, cu.fail("read unit DIE", err)
	}
	if !e.Children {
		return b.t, nil
	}
	walkErr := b.walk(ur, &e, scopeLevel{node: -1}, false)
	b.name()
	b.t.seg = b.segments()
	// A partly decoded unit is still useful: report the error alongside.
	return b.t, walkErr
}

// walk reads DIEs from the reader's position within level base, adding
// functions, inlined calls and static variables to the tree: after the
// unit DIE, the rest of the unit; with one set, the subtree of the next DIE
// only (one function, for funcScopes). With b.index set, functions outside
// functions are recorded there and their children skipped.
func (b *scopeBuild) walk(ur *dwarf.UnitReader, e *dwarf.Entry, base scopeLevel, one bool) error {
	cu := b.cu
	stack := []scopeLevel{base}
	var walkErr error
	started := false
	for len(stack) > 0 && !ur.Done() {
		if one && started && len(stack) == 1 {
			break // the subtree is done
		}
		started = true
		if err := ur.NextSkipping(e, scopeTag); err != nil {
			return cu.fail("read DIE", err)
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		top := stack[len(stack)-1]
		next, descend := top, false
		switch e.Tag {
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine:
			if b.index != nil && top.node < 0 && e.Tag == dwarf.TagSubprogram {
				if ok, err := b.index.add(b, ur, e, top); err != nil {
					return err
				} else if ok {
					continue // recorded, its children skipped
				}
			}
			var err error
			next.node, err = b.function(e, top)
			if err != nil {
				walkErr = err
			}
			descend = next.node >= 0
		case dwarf.TagVariable:
			if top.node < 0 {
				b.variable(e, top)
			}
		case dwarf.TagLexicalBlock, 0x32 /* try_block */, 0x25 /* catch_block */ :
			descend = top.node >= 0
		case dwarf.TagNamespace, dwarf.TagClassType, dwarf.TagStructureType, dwarf.TagUnionType, tagModule:
			// A module qualifies Fortran names (m::deep); gdb leaves a D
			// module's out (GDC's inlined shortSort, not d::shortSort).
			if p, ok := scopePrefix(e, next.prefix); ok && (e.Tag != tagModule || cu.fortran()) {
				next.prefix = int32(len(b.decls.prefixes))
				b.decls.prefixes = append(b.decls.prefixes, p)
			}
			descend = true
		}
		if !e.Children {
			continue
		}
		if descend {
			stack = append(stack, next)
		} else if err := ur.SkipChildren(e); err != nil {
			return cu.fail("skip DIE children", err)
		}
	}
	return walkErr
}

// function adds a subprogram or inlined subroutine with code as a node and
// returns its index; one without code (a declaration or an abstract
// instance, which other DIEs refer to for names) is recorded in decls and
// yields -1.
func (b *scopeBuild) function(e *dwarf.Entry, top scopeLevel) (int32, error) {
	cu, t := b.cu, b.t
	di := cu.declOf(e, top.prefix)
	var err error
	b.rs, err = cu.rangesOf(e, b.rs[:0])
	if err != nil {
		err = cu.fail("read ranges", err)
	}
	inlined := e.Tag == dwarf.TagInlinedSubroutine
	if len(b.rs) == 0 || (inlined && top.node < 0) {
		if !inlined {
			b.decls.add(e.Offset, di)
		}
		return -1, err
	}
	b.nodeDecls = append(b.nodeDecls, di)
	n := scopeNode{parent: -1, declOff: e.Offset}
	if inlined {
		n.parent = top.node
		n.depth = t.nodes[top.node].depth + 1
		for _, f := range e.Fields {
			switch f.Attr {
			case dwarf.AttrCallFile:
				n.callFile = uint32(f.Val)
			case dwarf.AttrCallLine:
				n.callLine = uint32(f.Val)
			case dwarf.AttrCallColumn:
				n.callCol = uint32(f.Val)
			}
		}
	}
	n.r0 = int32(len(t.ranges))
	t.ranges = append(t.ranges, b.rs...)
	n.r1 = int32(len(t.ranges))
	if f := e.Field(dwarf.AttrMainSubprogram); !inlined && f != nil && f.Class == dwarf.ClassFlag && f.Val != 0 {
		t.mains = append(t.mains, int32(len(t.nodes)))
	}
	t.nodes = append(t.nodes, n)
	return int32(len(t.nodes) - 1), err
}

// variable records a variable outside functions: one with a static address
// as a global, a declaration (a static member, say) for names.
func (b *scopeBuild) variable(e *dwarf.Entry, top scopeLevel) {
	cu := b.cu
	if addr, ok := cu.staticAddress(e.Field(dwarf.AttrLocation)); ok {
		b.varDecls = append(b.varDecls, cu.declOf(e, top.prefix))
		b.t.vars = append(b.t.vars, globalVar{addr: addr, declOff: e.Offset})
	} else if f := e.Field(dwarf.AttrDeclaration); f != nil {
		b.decls.add(e.Offset, cu.declOf(e, top.prefix))
	}
}

// scopePrefix returns the prefix a namespace or class DIE gives its
// members' names, undecoded (prefixOf spells it); ok is false when it can
// give none (an unnamed class).
func scopePrefix(e *dwarf.Entry, parent int32) (p prefixEntry, ok bool) {
	p.parent, p.tag = parent, e.Tag
	if f := e.Field(dwarf.AttrName); f != nil {
		p.name = *f
		return p, true
	}
	if f := e.Field(dwarf.AttrSignature); f != nil && f.Class == dwarf.ClassRefSig {
		// A declaration standing for a type unit's type: the name is there.
		p.name = *f
		return p, true
	}
	return p, e.Tag == dwarf.TagNamespace
}

// prefixEntry is a namespace or class the walk entered: its name's
// attribute (none for an anonymous namespace), and its enclosing one.
type prefixEntry struct {
	name   dwarf.Field
	parent int32
	tag    uint16
	done   bool
	full   string // the qualified name, once spelled
}

// scopeName is the name a namespace or class gives its members' names.
func (cu *compUnit) scopeName(p *prefixEntry) string {
	switch {
	case p.name.Attr == dwarf.AttrName:
		name, _ := cu.str(&p.name)
		return name
	case p.name.Attr == dwarf.AttrSignature:
		return cu.file.typeName(p.name.Val)
	case p.tag == dwarf.TagNamespace:
		return "(anonymous namespace)"
	}
	return ""
}

// name gives every node and variable its name: one fnName per naming DIE,
// shared by the nodes naming the same thing.
func (b *scopeBuild) name() {
	t := b.t
	b.decls.finish()
	names := map[uint64]*fnName{}
	store := b.cu.file.nameStore()
	for i := range t.nodes {
		n := &t.nodes[i]
		di := b.nodeDecls[i]
		key := n.declOff
		if di.ref.Class == dwarf.ClassRef && di.linkage.Class == dwarf.ClassNone {
			// Inlined and out-of-line copies share their origin's name;
			// a copy with a linkage name of its own (GCC's clones:
			// f.constprop.0, f.part.0.lto_priv.0) is named by it.
			key = di.ref.Val
		}
		fn := names[key]
		if fn == nil {
			fn = &fnName{names: store}
			b.cu.fillName(fn, di, b.decls, 0)
			names[key] = fn
		}
		n.name = fn
	}
	for i := range t.vars {
		v := &t.vars[i]
		v.name = &fnName{names: store}
		b.cu.fillName(v.name, b.varDecls[i], b.decls, 0)
	}
}

// segments maps addresses to the innermost node covering them.
func (b *scopeBuild) segments() segmentMap {
	t := b.t
	spans := make([]span, 0, len(t.ranges))
	for i, n := range t.nodes {
		for _, r := range t.ranges[n.r0:n.r1] {
			if usableRange(r.Lo, r.Hi) {
				spans = append(spans, span{r.Lo, r.Hi, int32(i), n.depth})
			}
		}
	}
	return buildSegments(spans)
}

// staticAddress decodes a location expression that is just an address
// (DW_OP_addr or DW_OP_addrx), as for global and static variables.
func (cu *compUnit) staticAddress(f *dwarf.Field) (uint64, bool) {
	if f == nil || f.Class != dwarf.ClassBlock || f.Len == 0 {
		return 0, false
	}
	info := cu.data()
	if f.Val >= uint64(len(info)) || uint64(f.Len) > uint64(len(info))-f.Val {
		return 0, false
	}
	b := info[f.Val : f.Val+uint64(f.Len)]
	switch {
	case b[0] == 0x03 && len(b) == 1+int(cu.hdr.AddrSize): // DW_OP_addr
		var v uint64
		for i := len(b) - 1; i >= 1; i-- {
			v = v<<8 | uint64(b[i])
		}
		return v, v != 0
	case b[0] == 0xa1 || b[0] == 0xfb: // DW_OP_addrx, DW_OP_GNU_addr_index
		c := dwarf.NewCursor(".debug_info", b, 1)
		idx := c.Uleb()
		if c.Err() != nil || c.Remaining() != 0 {
			return 0, false // not just the one operation
		}
		v, err := cu.addrx(idx)
		return v, err == nil && v != 0
	}
	return 0, false
}

// scopeTag reports the tags whose attributes buildScopes reads.
func scopeTag(tag uint16) bool {
	switch tag {
	case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine, dwarf.TagVariable,
		dwarf.TagNamespace, dwarf.TagClassType, dwarf.TagStructureType, dwarf.TagUnionType, tagModule:
		return true
	}
	return false
}

// declIndex holds the declarations a unit's walk met (what other DIEs name
// through DW_AT_abstract_origin or DW_AT_specification), by DIE offset. The
// walk only moves forward, so they arrive sorted and are found by binary
// search: a large C++ unit has tens of thousands of them, and filling a
// map of them cost more than the rest of the walk.
type declIndex struct {
	offs     []uint64
	infos    []declInfo
	unsorted bool // an offset arrived out of order (a damaged sibling link)
	// outer, for the declarations of one function's subtree (funcScopes),
	// is the unit's index of those outside functions, asked on a miss;
	// outerMiss is set when a miss lies in the body of another function,
	// which that index skipped (the whole unit's walk would know it).
	outer     *funcScopes
	body      bodySpan
	outerMiss bool
	// prefixes are the namespaces and classes the walk entered (an empty
	// one first, for none), which declInfo.prefix indexes; their names are
	// read when a name needs them (a large unit has thousands).
	prefixes []prefixEntry
	cu       *compUnit
}

func newDeclIndex(cu *compUnit, capacity int) *declIndex {
	return &declIndex{cu: cu, offs: make([]uint64, 0, capacity), infos: make([]declInfo, 0, capacity),
		prefixes: []prefixEntry{{done: true}}}
}

// prefixOf returns the qualified name of prefix i, "a::B" ("" for none, a
// nil index or a bad i).
func (x *declIndex) prefixOf(i int32) string {
	if x == nil || i <= 0 || int(i) >= len(x.prefixes) {
		return ""
	}
	p := &x.prefixes[i]
	if !p.done {
		p.done = true // a damaged parent link cannot loop: parents come first
		outer := ""
		if p.parent < i {
			outer = x.prefixOf(p.parent)
		}
		switch name := x.cu.scopeName(p); {
		case name == "":
			p.full = outer
		case outer == "":
			p.full = name
		default:
			p.full = outer + "::" + name
		}
	}
	return p.full
}

func (x *declIndex) add(off uint64, di declInfo) {
	if n := len(x.offs); n > 0 && x.offs[n-1] >= off {
		x.unsorted = true
	}
	x.offs = append(x.offs, off)
	x.infos = append(x.infos, di)
}

// finish sorts what arrived out of order; the last declaration at an
// offset wins, as a map's assignment would.
func (x *declIndex) finish() {
	if !x.unsorted {
		return
	}
	idx := make([]int, len(x.offs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x.offs[idx[a]] < x.offs[idx[b]] })
	offs := make([]uint64, 0, len(idx))
	infos := make([]declInfo, 0, len(idx))
	for _, i := range idx {
		if n := len(offs); n > 0 && offs[n-1] == x.offs[i] {
			infos[n-1] = x.infos[i]
			continue
		}
		offs = append(offs, x.offs[i])
		infos = append(infos, x.infos[i])
	}
	x.offs, x.infos, x.unsorted = offs, infos, false
}

func (x *declIndex) get(off uint64) (declInfo, bool) {
	if x == nil {
		return declInfo{}, false
	}
	i, ok := slices.BinarySearch(x.offs, off)
	if !ok {
		if x.outer != nil {
			if di, ok := x.outer.decls.get(off); ok {
				return di, true
			}
			if !x.body.holds(off) && x.outer.inBody(off) {
				x.outerMiss = true
			}
		}
		return declInfo{}, false
	}
	return x.infos[i], true
}
