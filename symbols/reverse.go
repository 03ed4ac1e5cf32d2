package symbols

import (
	"runtime/debug"
	"sort"
	"strings"

	"github.com/sondedbg/sonde/dwarf"
	"github.com/sondedbg/sonde/symbols/elfsym"
)

// Range is a half-open address range [Lo, Hi).
type Range struct{ Lo, Hi uint64 }

// FunctionInstance is one copy of a function's code: its out-of-line body
// (or a compiler clone of it), or one inlined call.
type FunctionInstance struct {
	Function    string // as in Frame.Function
	LinkageName string
	// Ranges are the code ranges, the entry range first (GCC lists the hot
	// part before a .cold part); Entry is Ranges[0].Lo.
	Ranges []Range
	Entry  uint64
	// Inlined marks an inlined call; CallFile/CallLine is its call site.
	Inlined  bool
	CallFile string
	CallLine int
	// FromSymbolTable is set when the instance comes from the ELF symbols
	// (no DWARF describes the function); Ranges then has one entry.
	FromSymbolTable bool
}

// Variable is a variable with a static address.
type Variable struct {
	Name, LinkageName string
	Addr              uint64
	FromSymbolTable   bool
}

// nameIndex maps every spelling of a function or variable name to its DWARF
// instances: the DWARF name, the qualified name, the linkage name, and the
// demangled name with and without its parameter list.
type nameIndex struct {
	funcs map[string][]nodeRef
	vars  map[string][]nodeRef
	mains []nodeRef // functions marked DW_AT_main_subprogram
	errs  []error
}

type nodeRef struct {
	unit *compUnit // the unit holding the scope tree
	line *compUnit // the unit holding the line table (the skeleton for split units)
	idx  int32
}

// forEachUnit decodes every unit's scope tree and calls fn; errors of single
// units are collected, never fatal.
func (d *dwarfFile) forEachUnit(fn func(cu, du *compUnit, t *scopeTree)) []error {
	d.index()
	var errs []error
	for _, cu := range d.units {
		if cu.hdr.Type != dwarf.UnitCompile && cu.hdr.Type != dwarf.UnitSkeleton {
			continue
		}
		du, err := cu.dieUnit()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t, err := du.scopeTree()
		if err != nil {
			errs = append(errs, err)
		}
		if t != nil {
			fn(cu, du, t)
		}
	}
	return errs
}

func (d *dwarfFile) names() *nameIndex {
	d.namesOnce.Do(func() {
		x := &nameIndex{funcs: map[string][]nodeRef{}, vars: map[string][]nodeRef{}}
		add := func(m map[string][]nodeRef, n *fnName, ref nodeRef) {
			for _, k := range nameKeys(n) {
				m[k] = append(m[k], ref)
			}
		}
		x.errs = d.forEachUnit(func(cu, du *compUnit, t *scopeTree) {
			for i := range t.nodes {
				add(x.funcs, t.nodes[i].name, nodeRef{du, cu, int32(i)})
			}
			for i := range t.vars {
				add(x.vars, t.vars[i].name, nodeRef{du, cu, int32(i)})
			}
			for _, i := range t.mains {
				x.mains = append(x.mains, nodeRef{du, cu, i})
			}
		})
		d.nameIdx = x
	})
	return d.nameIdx
}

// nameKeys lists the distinct spellings under which n can be looked up.
func nameKeys(n *fnName) []string {
	keys := make([]string, 0, 5)
	addKey := func(k string) {
		if k == "" {
			return
		}
		for _, have := range keys {
			if have == k {
				return
			}
		}
		keys = append(keys, k)
	}
	addKey(n.raw)
	if n.raw != "" {
		// The qualified name, and as gdb's linespecs take it: any tail of
		// it after a "::" ("Square::area" for ns::Square::area), and
		// without template arguments ("ns::twice" for ns::twice<int>,
		// "Stack::push" for ns::Stack<int>::push).
		q := n.raw
		if n.prefix != "" {
			q = n.prefix + "::" + n.raw
		}
		for _, k := range qualifiedTails(q) {
			addKey(k)
		}
		if bare := stripTemplateArgs(q); bare != q {
			for _, k := range qualifiedTails(bare) {
				addKey(k)
			}
		}
	}
	addKey(n.linkage)
	d := n.Display()
	addKey(d)
	addKey(stripParams(d))
	return keys
}

// qualifiedTails returns q and each tail of it that follows a "::" outside
// brackets: "a::B<c::d>::f" -> "a::B<c::d>::f", "B<c::d>::f", "f".
func qualifiedTails(q string) []string {
	tails := []string{q}
	depth := 0
	for i := 0; i+1 < len(q); i++ {
		switch q[i] {
		case '<', '(', '[':
			depth++
		case '>', ')', ']':
			depth--
		case ':':
			if depth == 0 && q[i+1] == ':' && i+2 < len(q) {
				tails = append(tails, q[i+2:])
				i++
			}
		}
	}
	return tails
}

// stripTemplateArgs removes the template argument lists of a qualified
// name's components: "ns::Stack<int>::push" -> "ns::Stack::push". Lists
// that begin a component (gcc's "<lambda(int)>") and the angle brackets of
// operator names stay.
func stripTemplateArgs(q string) string {
	if !strings.Contains(q, "<") || strings.Contains(q, "operator") {
		return q
	}
	var b strings.Builder
	depth := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '<' && depth == 0 && i > 0 && q[i-1] != ':':
			depth = 1
		case depth > 0 && c == '<':
			depth++
		case depth > 0 && c == '>':
			depth--
		case depth == 0:
			b.WriteByte(c)
		}
	}
	if depth != 0 {
		return q // unbalanced: not a template argument list
	}
	return b.String()
}

// stripParams removes a demangled name's trailing parameter list and
// qualifiers: "ns::f(int) const" -> "ns::f".
func stripParams(s string) string {
	if !strings.HasSuffix(s, ")") && !strings.HasSuffix(s, " const") {
		return s
	}
	t := strings.TrimSuffix(s, " const")
	if !strings.HasSuffix(t, ")") {
		return s
	}
	if strings.HasSuffix(t, "operator()") && !strings.HasSuffix(t, ")()") {
		return s // the parentheses are the operator's name
	}
	depth := 0
	for i := len(t) - 1; i >= 0; i-- {
		switch t[i] {
		case ')':
			depth++
		case '(':
			depth--
			if depth == 0 {
				return t[:i]
			}
		}
	}
	return s
}

// LookupFunction returns every instance of the named function: out-of-line
// bodies, clones and all inlined calls. name may be the source name
// ("push"), qualified ("ns::Stack<int>::push"), demangled with parameters,
// or the linkage name. Without DWARF the ELF symbols answer.
func (b *Binary) LookupFunction(name string) (_ []FunctionInstance, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	var out []FunctionInstance
	var errs []error
	if b.dw != nil {
		x := b.dw.names()
		errs = x.errs
		for _, ref := range x.funcs[name] {
			out = append(out, ref.function())
		}
	}
	if len(out) == 0 {
		for _, s := range b.symbolsByName(name, elfsym.KindFunc, elfsym.KindIFunc) {
			out = append(out, FunctionInstance{Function: s.Demangled(), LinkageName: s.Name, Entry: s.Addr,
				Ranges: []Range{{s.Addr, s.End()}}, FromSymbolTable: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entry < out[j].Entry })
	return out, firstError(errs)
}

// function describes the function node ref names.
func (ref nodeRef) function() FunctionInstance {
	t := ref.unit.scopes
	nd := &t.nodes[ref.idx]
	fi := FunctionInstance{Function: nd.name.Display(), LinkageName: nd.name.linkage, Inlined: nd.depth > 0}
	for _, r := range t.ranges[nd.r0:nd.r1] {
		fi.Ranges = append(fi.Ranges, Range(r))
	}
	if len(fi.Ranges) > 0 {
		fi.Entry = fi.Ranges[0].Lo
	}
	if fi.Inlined {
		lt, _ := ref.line.lineTable()
		fi.CallFile, fi.CallLine = lt.file(nd.callFile), int(nd.callLine)
	}
	return fi
}

// MainSubprograms returns the functions DWARF marks as the program's main
// (DW_AT_main_subprogram: Rust's and Fortran's main, which the ELF symbol
// main only calls through the language's runtime). It reads the names of
// the whole file, as LookupFunction does.
func (b *Binary) MainSubprograms() (_ []FunctionInstance, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	if b.dw == nil {
		return nil, nil
	}
	x := b.dw.names()
	var out []FunctionInstance
	for _, ref := range x.mains {
		out = append(out, ref.function())
	}
	return out, firstError(x.errs)
}

// LookupVariable returns the static addresses of the named global or static
// variable (DWARF first, else ELF data symbols).
func (b *Binary) LookupVariable(name string) (_ []Variable, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	var out []Variable
	var errs []error
	if b.dw != nil {
		x := b.dw.names()
		errs = x.errs
		for _, ref := range x.vars[name] {
			v := &ref.unit.scopes.vars[ref.idx]
			out = append(out, Variable{Name: v.name.Display(), LinkageName: v.name.linkage, Addr: v.addr})
		}
	}
	if len(out) == 0 {
		for _, s := range b.symbolsByName(name, elfsym.KindObject) {
			out = append(out, Variable{Name: s.Demangled(), LinkageName: s.Name, Addr: s.Addr, FromSymbolTable: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out, firstError(errs)
}

func firstError(errs []error) error {
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// LineLocation is one place where a source line's code starts.
type LineLocation struct {
	Addr     uint64
	File     string
	Line     int
	Function string // innermost function (an inlined one when the line was inlined)
	Inlined  bool
}

// LookupLine returns the addresses for a breakpoint at file:line: one per
// function instance that has code for the line (every inlined copy and
// clone), at the lowest is_stmt address of the line in that instance. file
// matches any recorded path that ends with it at a '/' boundary
// ("dw_x.c", "testdata/dw_x.c", or the full path). When no code has
// exactly that line, the nearest following line with code is used, as gdb does.
func (b *Binary) LookupLine(file string, line int) (_ []LineLocation, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	if b.dw == nil || line <= 0 {
		return nil, nil
	}
	type cand struct {
		cu   *compUnit
		lt   *lineTable
		row  int
		line uint32
	}
	var cands []cand
	best := ^uint32(0)
	var errs []error
	b.dw.index()
	for _, cu := range b.dw.units {
		if cu.hdr.Type != dwarf.UnitCompile && cu.hdr.Type != dwarf.UnitSkeleton {
			continue
		}
		lt, err := cu.lineTable()
		if err != nil {
			errs = append(errs, err)
		}
		if lt == nil {
			continue
		}
		match := make([]bool, len(lt.files))
		any := false
		for i, f := range lt.files {
			if pathHasSuffix(f, file) {
				match[i], any = true, true
			}
		}
		if !any {
			continue
		}
		for i, r := range lt.rows {
			if r.Flags&dwarf.RowStmt == 0 || r.Flags&dwarf.RowEndSequence != 0 ||
				int(r.File) >= len(match) || !match[r.File] || r.Line < uint32(line) {
				continue
			}
			if r.Line < best {
				best = r.Line
				cands = cands[:0]
			}
			if r.Line == best {
				cands = append(cands, cand{cu, lt, i, r.Line})
			}
		}
	}
	// One location per innermost scope instance: its lowest address.
	type key struct {
		cu   *compUnit
		node int32
	}
	lowest := map[key]LineLocation{}
	for _, c := range cands {
		r := c.lt.rows[c.row]
		loc := LineLocation{Addr: r.Addr, File: c.lt.file(r.File), Line: int(r.Line)}
		k := key{c.cu, -1}
		if du, err := c.cu.dieUnit(); err == nil {
			if t, _ := du.scopeTree(); t != nil {
				if n := t.seg.find(r.Addr); n >= 0 {
					k.node = n
					loc.Function, loc.Inlined = t.nodes[n].name.Display(), t.nodes[n].depth > 0
				}
			}
		}
		if k.node < 0 {
			k.node = -2 - int32(c.row) // no scope known: keep every row
		}
		if have, ok := lowest[k]; !ok || loc.Addr < have.Addr {
			lowest[k] = loc
		}
	}
	out := make([]LineLocation, 0, len(lowest))
	for _, l := range lowest {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out, firstError(errs)
}

// pathHasSuffix reports whether path ends with suffix at a '/' boundary.
func pathHasSuffix(path, suffix string) bool {
	if suffix == "" || !strings.HasSuffix(path, suffix) {
		return false
	}
	return len(path) == len(suffix) || suffix[0] == '/' || path[len(path)-len(suffix)-1] == '/'
}

// LineInfo is the line-table row that describes an address, with the
// address range [Start, End) that row covers (what "step" stays within).
type LineInfo struct {
	File         string
	Line, Column int
	Start, End   uint64
	// IsStmt: the row is a statement (gdb prints a frame's address when
	// its pc is not at the start of one).
	IsStmt bool
}

// LineAt returns the line row for addr (gdb's choice among rows sharing an
// address) and its range; ok is false when no line describes addr.
func (b *Binary) LineAt(addr uint64) (info LineInfo, ok bool, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	lt, err := b.lineTableAt(addr)
	if lt == nil {
		return info, false, err
	}
	i := lt.find(addr)
	if i < 0 {
		return info, false, err
	}
	r := lt.rows[i]
	info = LineInfo{File: lt.file(r.File), Line: int(r.Line), Column: int(r.Column), Start: r.Addr, End: r.Addr,
		IsStmt: r.Flags&dwarf.RowStmt != 0}
	for j := i + 1; j < len(lt.rows); j++ {
		if lt.rows[j].Addr > r.Addr {
			info.End = lt.rows[j].Addr
			break
		}
	}
	return info, true, err
}

// LineEntry is one row of a line table as gdb records it.
type LineEntry struct {
	Addr         uint64
	File         string
	Line, Column int
	IsStmt       bool
	// EndSequence marks the first address after a sequence of code.
	EndSequence bool
}

// lineTableAt is the line table of the unit covering addr (nil for none).
func (b *Binary) lineTableAt(addr uint64) (*lineTable, error) {
	cu := b.dw.unitAt(addr)
	if cu == nil {
		return nil, nil
	}
	return cu.lineTable()
}

// LineSequence returns the rows of the line-table sequence containing addr
// (a contiguous run of code, usually one function), in address order,
// ending with its end-of-sequence row: what line stepping walks.
func (b *Binary) LineSequence(addr uint64) (_ []LineEntry, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	lt, err := b.lineTableAt(addr)
	if lt == nil {
		return nil, err
	}
	rows := lt.rows
	i := sort.Search(len(rows), func(i int) bool { return rows[i].Addr > addr }) - 1
	if i < 0 || rows[i].Flags&dwarf.RowEndSequence != 0 {
		return nil, err
	}
	lo := i
	for lo > 0 && rows[lo-1].Flags&dwarf.RowEndSequence == 0 {
		lo--
	}
	hi := i
	for hi < len(rows)-1 && rows[hi].Flags&dwarf.RowEndSequence == 0 {
		hi++
	}
	out := make([]LineEntry, 0, hi-lo+1)
	for _, r := range rows[lo : hi+1] {
		out = append(out, LineEntry{Addr: r.Addr, File: lt.file(r.File), Line: int(r.Line), Column: int(r.Column),
			IsStmt: r.Flags&dwarf.RowStmt != 0, EndSequence: r.Flags&dwarf.RowEndSequence != 0})
	}
	return out, err
}

// Scope is one level of the inline chain at an address, with its code
// ranges: the function itself (Inlined false, the last scope) or an
// inlined call (with its call site).
type Scope struct {
	Function, LinkageName string
	Inlined               bool
	Ranges                []Range
	CallFile              string
	CallLine, CallColumn  int
}

// Scopes returns the inline chain at addr, innermost first, with the code
// ranges of each level: "step out" of an inlined call ends where the pc
// leaves its ranges; "finish" of the function uses the last scope.
func (b *Binary) Scopes(addr uint64) (_ []Scope, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	cu := b.dw.unitAt(addr)
	if cu == nil {
		return nil, nil
	}
	du, err := cu.dieUnit()
	if err != nil {
		return nil, err
	}
	t, err := du.scopeTree()
	if t == nil {
		return nil, err
	}
	lt, _ := cu.lineTable()
	var out []Scope
	for n := t.seg.find(addr); n >= 0; {
		nd := &t.nodes[n]
		s := Scope{Function: nd.name.Display(), LinkageName: nd.name.linkage, Inlined: nd.depth > 0}
		for _, r := range t.ranges[nd.r0:nd.r1] {
			s.Ranges = append(s.Ranges, Range(r))
		}
		if s.Inlined {
			s.CallFile, s.CallLine, s.CallColumn = lt.file(nd.callFile), int(nd.callLine), int(nd.callCol)
		}
		out = append(out, s)
		if nd.parent >= n {
			break
		}
		n = nd.parent
	}
	return out, err
}
