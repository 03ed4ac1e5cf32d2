package symbols

import (
	"debug/elf"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strings"

	"github.com/sondedbg/sonde/dwarf"
	"github.com/sondedbg/sonde/symbols/elfsym"
)

// Call-site DWARF: the DW_TAG_call_site entries (DWARF 5; DW_TAG_GNU_call_site
// in GCC's DWARF 4 extension) a compiler writes for each call of an optimized
// function — where it returns, what it calls, whether it is a tail call (a
// jump that leaves no frame), and the values of the arguments at the call.
// Debuggers build tail-call frames from it (gdb's dwarf2/frame-tailcall.c)
// and argument values at function entry (gdb's "@entry" values, from
// DW_TAG_call_site_parameter). Call sites are decoded per compile unit, the
// first time one of the unit's call sites is asked for.

// CallSite is one call (or tail call) DWARF describes. Addresses are
// link-time addresses of the binary.
type CallSite struct {
	// ReturnPC is the address after the call instruction
	// (DW_AT_call_return_pc; DW_AT_low_pc of a GNU call site); for a tail call,
	// the address after the jump.
	ReturnPC uint64
	// CallPC is the address of the call instruction (DW_AT_call_pc), 0 when
	// DWARF does not give it.
	CallPC uint64
	// Tail marks a tail call (DW_AT_call_tail_call, DW_AT_GNU_tail_call).
	Tail bool
	// Target is what is called.
	Target CallTarget
	// Func is the entry address of the function whose code holds the call
	// (the innermost DW_TAG_subprogram with code around it: calls inside
	// inlined code belong to the function they were inlined into).
	Func uint64
	// Params are the DW_TAG_call_site_parameter children.
	Params []CallSiteParam
	// Offset is the DIE's offset in .debug_info (of the .dwo for split DWARF).
	Offset uint64
}

// CallTargetKind says how a call site names its callee.
type CallTargetKind uint8

const (
	// TargetUnknown: neither DW_AT_call_target nor DW_AT_call_origin.
	TargetUnknown CallTargetKind = iota
	// TargetAddress: the callee is a function with code in this binary
	// (DW_AT_call_origin refers to a DIE with an entry address); Addr is it.
	TargetAddress
	// TargetName: the callee is declared here, defined elsewhere
	// (DW_AT_call_origin refers to a declaration or an abstract instance);
	// Name is its linkage name, or its name when it has none, to be resolved
	// through symbol tables.
	TargetName
	// TargetExpr: DW_AT_call_target is a DWARF expression computing the
	// callee's address (an indirect call); it needs the caller's registers.
	TargetExpr
)

func (k CallTargetKind) String() string {
	switch k {
	case TargetAddress:
		return "address"
	case TargetName:
		return "name"
	case TargetExpr:
		return "expression"
	}
	return "unknown"
}

// CallTarget is a call site's callee.
type CallTarget struct {
	Kind CallTargetKind
	Addr uint64 // TargetAddress: the callee's entry (link time)
	Name string // TargetName
	Expr []byte // TargetExpr: a DWARF expression (evaluated in the caller's frame)
}

// CallSiteParam is one DW_TAG_call_site_parameter: where an argument is
// passed and what the caller can say about its value at the call.
type CallSiteParam struct {
	// Location is DW_AT_location: where the callee finds the argument at
	// its entry, usually DW_OP_regN.
	Location []byte
	// Value is DW_AT_call_value (DW_AT_GNU_call_site_value): an expression
	// evaluated in the caller's frame at the return address that computes
	// the argument's value at the call. nil when absent.
	Value []byte
	// DataValue is DW_AT_call_data_value: the value of the object a
	// reference argument points to. nil when absent.
	DataValue []byte
	// Origin is the DIE offset of the callee's formal parameter
	// (DW_AT_call_parameter), 0 when absent.
	Origin uint64
}

// DWARF constants of call sites (DWARF 5 and the GNU extension).
const (
	tagCallSite             = 0x48
	tagCallSiteParameter    = 0x49
	tagGNUCallSite          = 0x4109
	tagGNUCallSiteParameter = 0x410a
	tagTryBlock             = 0x32
	tagCatchBlock           = 0x25

	attrEntryPC           = 0x52
	attrCallReturnPC      = 0x7d
	attrCallValue         = 0x7e
	attrCallOrigin        = 0x7f
	attrCallParameter     = 0x80
	attrCallPC            = 0x81
	attrCallTailCall      = 0x82
	attrCallTarget        = 0x83
	attrCallDataValue     = 0x86
	attrGNUCallSiteValue  = 0x2111
	attrGNUCallDataValue  = 0x2112
	attrGNUCallSiteTarget = 0x2113
	attrGNUTailCall       = 0x2115
)

// unitCallSites are a compile unit's call sites, sorted by ReturnPC, and
// the entries of its functions with code, sorted.
type unitCallSites struct {
	sites []CallSite
	funcs []uint64
	err   error // the unit was decoded only in part
}

// maxCallSites bounds the call sites decoded from one unit: a damaged unit
// cannot make the reader allocate without end (each site costs a DIE).
const maxCallSites = 1 << 22

// CallSiteAt returns the call site whose return address is ret (link time):
// the call that a caller frame with return address ret is in.
func (b *Binary) CallSiteAt(ret uint64) (site CallSite, ok bool, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	if b.dw == nil || ret == 0 {
		return site, false, nil
	}
	// The call instruction lies before ret; ret itself may be the first
	// byte of the next function (a call to a noreturn function).
	cs, err := b.dw.callSitesOfFunction(ret - 1)
	if cs == nil {
		return site, false, err
	}
	i := sort.Search(len(cs.sites), func(i int) bool { return cs.sites[i].ReturnPC >= ret })
	if i < len(cs.sites) && cs.sites[i].ReturnPC == ret {
		return cs.sites[i], true, err
	}
	return site, false, err
}

// TailCallSites returns the tail calls made by the function whose entry
// address (link time) is entry, including those in code inlined into it.
// ok is false when DWARF describes no function starting at entry (gdb then
// gives up on a tail-call chain through it).
func (b *Binary) TailCallSites(entry uint64) (_ []CallSite, ok bool, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	if b.dw == nil {
		return nil, false, nil
	}
	cs, err := b.dw.callSitesAt(entry)
	if cs == nil {
		return nil, false, err
	}
	i := sort.Search(len(cs.funcs), func(i int) bool { return cs.funcs[i] >= entry })
	if i == len(cs.funcs) || cs.funcs[i] != entry {
		return nil, false, err
	}
	var out []CallSite
	for _, s := range cs.sites {
		if s.Tail && s.Func == entry {
			out = append(out, s)
		}
	}
	return out, true, err
}

// callSitesAt returns the call sites of the unit that covers pc.
func (d *dwarfFile) callSitesAt(pc uint64) (*unitCallSites, error) {
	cu := d.unitAt(pc)
	if cu == nil {
		return nil, nil
	}
	du, err := cu.dieUnit()
	if err != nil || du == nil {
		return nil, err
	}
	du.callsOnce.Do(func() { du.calls = du.readCallSites() })
	return du.calls, du.calls.err
}

// callSiteTag reports the tags whose attributes readCallSites reads.
func callSiteTag(tag uint16) bool {
	switch tag {
	case tagCallSite, tagGNUCallSite, tagCallSiteParameter, tagGNUCallSiteParameter, dwarf.TagSubprogram:
		return true
	}
	return false
}

// containsCalls reports whether DIEs with tag may hold call sites below them.
func containsCalls(tag uint16) bool {
	switch tag {
	case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine, dwarf.TagLexicalBlock,
		tagTryBlock, tagCatchBlock, dwarf.TagNamespace, tagModule, dwarf.TagClassType,
		dwarf.TagStructureType, dwarf.TagUnionType, tagCallSite, tagGNUCallSite:
		return true
	}
	return false
}

// readCallSites walks the unit's DIEs once and collects its call sites.
func (cu *compUnit) readCallSites() *unitCallSites {
	out := &unitCallSites{}
	if err := cu.readUnitDIE(); err != nil {
		out.err = err
		return out
	}
	ur, err := cu.reader()
	if err != nil {
		out.err = err
		return out
	}
	var e dwarf.Entry
	if err := ur.Next(&e); err != nil {
		out.err = cu.fail("read unit DIE", err)
		return out
	}
	if !e.Children {
		return out
	}
	cu.walkCallSites(ur, out, false)
	return out
}

// walkCallSites collects the call sites of the DIEs from the reader's
// position (outside functions) to the end of the unit, or with one set of
// the next DIE's subtree only, into out, and sorts them.
func (cu *compUnit) walkCallSites(ur *dwarf.UnitReader, out *unitCallSites, one bool) {
	type level struct {
		fn   uint64 // entry of the enclosing function with code, 0 outside one
		site int    // index in out.sites of the enclosing call site, -1 outside one
	}
	stack := []level{{site: -1}}
	var rs []dwarf.Range
	var e dwarf.Entry
	for started := false; len(stack) > 0 && !ur.Done() && !(one && started && len(stack) == 1); started = true {
		if err := ur.NextSkipping(&e, callSiteTag); err != nil {
			out.err = cu.fail("read DIE", err)
			break
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		top := stack[len(stack)-1]
		next := level{fn: top.fn, site: -1}
		switch e.Tag {
		case dwarf.TagSubprogram:
			if entry, ok := cu.entryPC(&e, &rs); ok {
				next.fn = entry
				out.funcs = append(out.funcs, entry)
			}
		case tagCallSite, tagGNUCallSite:
			if top.fn == 0 || len(out.sites) >= maxCallSites {
				break
			}
			if s, ok := cu.callSite(&e, top.fn); ok {
				out.sites = append(out.sites, s)
				next.site = len(out.sites) - 1
			}
		case tagCallSiteParameter, tagGNUCallSiteParameter:
			if top.site >= 0 {
				s := &out.sites[top.site]
				s.Params = append(s.Params, cu.callSiteParam(&e))
			}
		}
		if !e.Children {
			continue
		}
		if containsCalls(e.Tag) {
			stack = append(stack, next)
		} else if err := ur.SkipChildren(&e); err != nil {
			out.err = cu.fail("skip DIE children", err)
			break
		}
	}
	sort.SliceStable(out.sites, func(i, j int) bool { return out.sites[i].ReturnPC < out.sites[j].ReturnPC })
	slices.Sort(out.funcs)
}

// entryPC returns a function DIE's entry address: DW_AT_entry_pc, else
// DW_AT_low_pc, else the start of its first range (GCC lists the hot part
// of a split function first). ok is false for DIEs without code.
func (cu *compUnit) entryPC(e *dwarf.Entry, rs *[]dwarf.Range) (uint64, bool) {
	var err error
	*rs, err = cu.rangesOf(e, (*rs)[:0])
	if err != nil || len(*rs) == 0 {
		return 0, false
	}
	if f := e.Field(attrEntryPC); f != nil {
		switch f.Class {
		case dwarf.ClassAddress, dwarf.ClassAddrx:
			if v, err := cu.addr(f); err == nil {
				return v, true
			}
		case dwarf.ClassConst: // DWARF 5: an offset from the low pc
			if low := e.Field(dwarf.AttrLowPC); low != nil {
				if v, err := cu.addr(low); err == nil {
					return v + f.Val, true
				}
			}
		}
	}
	if low := e.Field(dwarf.AttrLowPC); low != nil {
		if v, err := cu.addr(low); err == nil {
			return v, true
		}
	}
	return (*rs)[0].Lo, true
}

// block returns the bytes of a block-class attribute, nil when f is not one
// or lies outside the unit's section.
func (cu *compUnit) block(f *dwarf.Field) []byte {
	if f == nil || f.Class != dwarf.ClassBlock {
		return nil
	}
	data := cu.data()
	if f.Val > uint64(len(data)) || uint64(f.Len) > uint64(len(data))-f.Val {
		return nil
	}
	return data[f.Val : f.Val+uint64(f.Len) : f.Val+uint64(f.Len)]
}

// callSite decodes one call-site DIE; ok is false without a return address
// (gdb skips such DIEs too).
func (cu *compUnit) callSite(e *dwarf.Entry, fn uint64) (CallSite, bool) {
	s := CallSite{Func: fn, Offset: e.Offset}
	var ret, target, origin *dwarf.Field
	for i := range e.Fields {
		f := &e.Fields[i]
		switch f.Attr {
		case attrCallReturnPC:
			ret = f
		case dwarf.AttrLowPC:
			if ret == nil {
				ret = f
			}
		case attrCallPC:
			s.CallPC, _ = cu.addr(f)
		case attrCallTailCall, attrGNUTailCall:
			s.Tail = f.Class == dwarf.ClassFlag && f.Val != 0
		case attrCallTarget, attrGNUCallSiteTarget:
			target = f
		case attrCallOrigin:
			origin = f
		case dwarf.AttrAbstractOrigin:
			if origin == nil {
				origin = f
			}
		}
	}
	if ret == nil {
		return s, false
	}
	v, err := cu.addr(ret)
	if err != nil || v == 0 {
		return s, false
	}
	s.ReturnPC = v
	// gdb's order: DW_AT_call_target first, then the origin.
	switch {
	case target != nil && target.Class == dwarf.ClassBlock:
		if b := cu.block(target); len(b) > 0 {
			s.Target = CallTarget{Kind: TargetExpr, Expr: b}
		}
	case target != nil:
		s.Target = cu.originTarget(target)
	case origin != nil:
		s.Target = cu.originTarget(origin)
	}
	return s, true
}

// originTarget resolves a reference to the callee's DIE: its entry address
// when it has code, else its name.
func (cu *compUnit) originTarget(f *dwarf.Field) CallTarget {
	switch f.Class {
	case dwarf.ClassRef:
		return cu.file.targetAt(f.Val)
	case dwarf.ClassRefAlt:
		if cu.file.alt != nil {
			if n, err := cu.file.alt.nameAt(f.Val, 0); err == nil && n != nil {
				return nameTarget(n)
			}
		}
	}
	return CallTarget{}
}

func nameTarget(n *fnName) CallTarget {
	switch {
	case n.linkage != "":
		return CallTarget{Kind: TargetName, Name: n.linkage}
	case n.raw != "":
		return CallTarget{Kind: TargetName, Name: n.raw}
	}
	return CallTarget{}
}

// targetAt reads the DIE at section offset off as a call's callee.
func (d *dwarfFile) targetAt(off uint64) CallTarget {
	cu := d.unitContaining(off)
	if cu == nil || cu.readUnitDIE() != nil {
		return CallTarget{}
	}
	ur, err := cu.reader()
	if err != nil || ur.Seek(off) != nil {
		return CallTarget{}
	}
	var e dwarf.Entry
	if ur.Next(&e) != nil || e.Tag != dwarf.TagSubprogram {
		return CallTarget{}
	}
	var rs []dwarf.Range
	if entry, ok := cu.entryPC(&e, &rs); ok {
		return CallTarget{Kind: TargetAddress, Addr: entry}
	}
	n, err := d.nameAt(off, 0)
	if err != nil || n == nil {
		return CallTarget{}
	}
	return nameTarget(n)
}

// callSiteParam decodes one call-site parameter DIE.
func (cu *compUnit) callSiteParam(e *dwarf.Entry) CallSiteParam {
	var p CallSiteParam
	for i := range e.Fields {
		f := &e.Fields[i]
		switch f.Attr {
		case dwarf.AttrLocation:
			p.Location = cu.block(f)
		case attrCallValue, attrGNUCallSiteValue:
			p.Value = cu.block(f)
		case attrCallDataValue, attrGNUCallDataValue:
			p.DataValue = cu.block(f)
		case attrCallParameter:
			if f.Class == dwarf.ClassRef {
				p.Origin = f.Val
			}
		}
	}
	return p
}

func (s CallSite) String() string {
	t := s.Target.Kind.String()
	switch s.Target.Kind {
	case TargetAddress:
		t = fmt.Sprintf("%#x", s.Target.Addr)
	case TargetName:
		t = s.Target.Name
	}
	tail := ""
	if s.Tail {
		tail = " tail"
	}
	return fmt.Sprintf("call site %#x in %#x%s -> %s", s.ReturnPC, s.Func, tail, t)
}

// FunctionAddress returns the link-time address of the defined ELF function
// symbol called name — how a call site's TargetName is resolved, as gdb
// resolves it through minimal symbols: global (or weak) ones before local
// ones. global says which it found.
func (b *Binary) FunctionAddress(name string) (addr uint64, global, ok bool) {
	if !strings.HasSuffix(name, "@plt") { // PLT stubs are the table's own
		// The same answer without building the table (funcsyms.go), nor,
		// when it is built, indexing all its names for a few call sites.
		return b.functionAddress(name)
	}
	for _, s := range b.symbols().ByLinkageName(name) {
		if s.Addr == 0 || (s.Kind != elfsym.KindFunc && s.Kind != elfsym.KindIFunc) {
			continue
		}
		if s.Bind != elf.STB_LOCAL {
			return s.Addr, true, true
		}
		if !ok {
			addr, ok = s.Addr, true
		}
	}
	return addr, false, ok
}
