package variables

import (
	"debug/dwarf"
	"errors"
	"fmt"

	dw "github.com/sondedbg/sonde/dwarf"
	"github.com/sondedbg/sonde/dwarfexpr"
)

// SymbolFrame is implemented by frames that can find a function of any
// module of the process by its ELF symbol name: a call site's
// DW_AT_call_origin that only declares the function it calls (a function of
// a shared library) is resolved through it, as gdb resolves it through its
// minimal symbols.
type SymbolFrame interface {
	SymbolAddresses(name string) []uint64
}

// EntryLoopError is gdb's error for a chain of entry values too long to
// follow (a deep recursion passing n-1 down: each level's value is an entry
// value of the next); gdb gives up after 256 levels, and so does sonde.
type EntryLoopError struct{}

func (EntryLoopError) Error() string { return "DWARF-2 expression error: Loop detected (257)." }

// EntryCache remembers the entry values recovered in the frames of one
// stack, with how many nested levels each took: a recursion's chain of
// entry values is then followed once, not once per frame. Frames that
// share one implement EntryCacher. Its methods are safe for one goroutine
// at a time (a stack is read by one).
type EntryCache struct {
	m       map[entryKey]entryResult
	deepest int
}

// NewEntryCache returns an empty cache.
func NewEntryCache() *EntryCache { return &EntryCache{m: map[entryKey]entryResult{}} }

// EntryCacher is implemented by frames that share an EntryCache.
type EntryCacher interface{ EntryCache() *EntryCache }

type entryKey struct {
	pc, sp uint64
	what   uint64 // a register, a frame-base offset or a parameter DIE
	kind   byte   // 'r', 'f', 'p'
}

type entryResult struct {
	v     uint64
	err   error
	chain int // the levels below this one the evaluation used
}

func entryCacheOf(f Frame) *EntryCache {
	if c, ok := f.(EntryCacher); ok {
		return c.EntryCache()
	}
	return nil
}

// maxTailCallWalk bounds the functions visited checking that a function
// cannot tail-call itself.
const maxTailCallWalk = 256

// EntryValue returns parameter v's value on entry to its function in frame
// f, as gdb's backtrace shows it (name@entry=VALUE, "print entry-values
// default"): v's location at the entry of its function (or inlined call)
// must be a single register or a frame-base offset; the caller's call site
// returning to the caller frame's pc must call this frame's function (its
// DW_AT_call_origin or DW_AT_call_target), the function must not be able to
// tail-call itself, and the call site must say what it passed there
// (DW_TAG_call_site_parameter with DW_AT_call_value, evaluated in the
// caller's frame). Anything else is an error wrapping ErrNotFound: no entry
// value is known.
func (r *Reader) EntryValue(v *Variable, f Frame) (Value, error) {
	if v.r != nil && v.r != r {
		return v.r.EntryValue(v, f)
	}
	val := Value{Type: v.Type}
	s := v.Scope
	if s == nil || !v.Param || len(s.Ranges) == 0 {
		return val, fmt.Errorf("%w: %s is not a parameter of a function with code", ErrNotFound, v.Name)
	}
	if t := v.Type.Strip(); t == nil || t.Kind == KindReference || t.Kind == KindRValueReference {
		// gdb needs DW_AT_call_data_value for references; not read here.
		return val, fmt.Errorf("%w: entry value of a reference", ErrNotFound)
	}
	size := v.Type.ByteSize()
	if size <= 0 || size > 8 {
		return val, fmt.Errorf("%w: entry value of a %d-byte %s", ErrNotFound, size, v.Type)
	}
	if v.Loc.Kind != LocExpr && v.Loc.Kind != LocList {
		return val, fmt.Errorf("%w: %s has no location expression", ErrNotFound, v.Name)
	}
	// gdb looks the location up at the entry of the frame's function — for
	// a parameter of an inlined call, the entry of the function it is
	// inlined into (get_frame_func), where the inlined call's parameters
	// usually have no location yet.
	fn := s.Function()
	if len(fn.Ranges) == 0 {
		return val, fmt.Errorf("%w: function without code", ErrNotFound)
	}
	expr, ok := v.Loc.At(fn.Ranges[0][0])
	if !ok {
		return val, fmt.Errorf("%w: %s has no location at its function's entry", ErrNotFound, v.Name)
	}
	reg, isReg := registerOp(expr)
	fbOff, isFB := fbregOp(expr)
	if !isReg && !isFB {
		return val, fmt.Errorf("%w: %s's location at entry is neither a register nor a frame-base offset", ErrNotFound, v.Name)
	}
	match := func(p callSiteParam) bool {
		if isReg {
			preg, ok := registerOp(p.loc)
			return ok && preg == reg
		}
		off, ok := spOffset(p.loc)
		return ok && off == fbOff
	}
	key := entryKey{kind: 'r', what: reg}
	if !isReg {
		key = entryKey{kind: 'f', what: uint64(fbOff)}
	}
	// Depth -1: the call site's value is evaluated at depth 0, as gdb
	// counts (its name@entry goes one level further than its name).
	bits, err := r.callerValue(fn, f, key, match, -1)
	if err != nil {
		return val, err
	}
	val.Place, val.Bytes = PlaceComputed, valueBytes(dwarfexpr.Value{Bits: bits}, size)
	return val, nil
}

// fbregOp recognizes a lone DW_OP_fbreg N.
func fbregOp(expr []byte) (int64, bool) {
	if len(expr) < 2 || expr[0] != 0x91 {
		return 0, false
	}
	c := dw.NewCursor("expression", expr, 1)
	v := c.Sleb()
	return v, c.Err() == nil && c.Remaining() == 0
}

// spOffset recognizes a lone DW_OP_breg7 N (a stack-passed argument of a
// call site).
func spOffset(expr []byte) (int64, bool) {
	if len(expr) < 2 || expr[0] != 0x77 {
		return 0, false
	}
	c := dw.NewCursor("expression", expr, 1)
	v := c.Sleb()
	return v, c.Err() == nil && c.Remaining() == 0
}

// callerValue finds the call site in f's caller that called fn (f's
// physical function, read by r) and evaluates, in the caller's frame, the
// value of the call-site parameter match accepts.
func (r *Reader) callerValue(fn *Scope, f Frame, key entryKey, match func(p callSiteParam) bool, depth int) (uint64, error) {
	c := entryCacheOf(f)
	if c == nil {
		return r.callerValueUncached(fn, f, match, depth)
	}
	key.pc = f.PC()
	key.sp, _ = f.CFA()
	if res, ok := c.m[key]; ok {
		if depth+res.chain >= maxEntryDepth {
			return 0, EntryLoopError{}
		}
		c.deepest = max(c.deepest, depth+res.chain)
		return res.v, res.err
	}
	saved := c.deepest
	c.deepest = depth
	v, err := r.callerValueUncached(fn, f, match, depth)
	chain := c.deepest - depth
	c.deepest = max(saved, c.deepest)
	var loop EntryLoopError
	if !errors.As(err, &loop) {
		c.m[key] = entryResult{v: v, err: err, chain: chain}
	}
	return v, err
}

// callerValueUncached is callerValue without the cache.
func (r *Reader) callerValueUncached(fn *Scope, f Frame, match func(p callSiteParam) bool, depth int) (uint64, error) {
	if c := entryCacheOf(f); c != nil {
		c.deepest = max(c.deepest, depth)
	}
	if len(fn.Ranges) == 0 {
		return 0, fmt.Errorf("%w: function without code", ErrNotFound)
	}
	callee := fn.Ranges[0][0] + f.Bias()
	caller, cr := f.Caller()
	if caller == nil || cr == nil {
		return 0, fmt.Errorf("%w: entry value needs the caller's frame", ErrNotFound)
	}
	cs, scopes, err := cr.callSiteAt(caller)
	if err != nil {
		return 0, err
	}
	targets, err := cr.callTargets(cs, scopes, caller, caller.Bias(), caller, depth)
	if err != nil {
		return 0, err
	}
	found := false
	for _, t := range targets {
		found = found || t == callee
	}
	if !found {
		return 0, fmt.Errorf("%w: the call site at %#x does not call %#x", ErrNotFound, caller.PC(), callee)
	}
	if err := r.noSelfTailCall(callee, f); err != nil {
		return 0, err
	}
	var value []byte
	for _, p := range cs.params {
		if match(p) {
			value = p.value
			break
		}
	}
	if value == nil {
		return 0, fmt.Errorf("%w: the call site at %#x does not record the parameter", ErrNotFound, caller.PC())
	}
	return cr.evalCallValue(value, scopes, caller, depth)
}

// evalCallValue evaluates a DW_AT_call_value in the caller's frame.
func (r *Reader) evalCallValue(value []byte, scopes []*Scope, caller Frame, depth int) (uint64, error) {
	fn := scopes[len(scopes)-1]
	owner := r
	if fn.r != nil {
		owner = fn.r
	}
	ev, err := owner.evalDepth(value, fn.unit, scopes[0], caller, depth+1)
	var loop EntryLoopError
	if errors.As(err, &loop) {
		return 0, loop
	}
	if err != nil {
		return 0, fmt.Errorf("%w: call value: %v", ErrNotFound, err)
	}
	if len(ev.pieces) > 0 {
		return 0, fmt.Errorf("%w: composite call value", ErrNotFound)
	}
	res := dwarfexpr.Result{Location: ev.Location}
	if v, ok := res.Word(); ok {
		return v, nil
	}
	if ev.Kind == dwarfexpr.KindRegister {
		v, err := exprTarget{caller}.Register(ev.Register)
		if err != nil {
			return 0, fmt.Errorf("%w: call value: %v", ErrNotFound, err)
		}
		return v, nil
	}
	return 0, fmt.Errorf("%w: call value is not a value", ErrNotFound)
}

// TailCallFrame is implemented by frames that can be the frame of a
// function that tail-called its callee (gdb's TAILCALL_FRAME): its pc is
// the address after the jump, the return pc of a tail call's call site.
type TailCallFrame interface{ TailCall() bool }

func isTailCall(f Frame) bool {
	t, ok := f.(TailCallFrame)
	return ok && t.TailCall()
}

// callSiteAt returns the call site whose return address is the caller
// frame's pc — a tail call when the caller is a tail-call frame, else a
// call — with the caller's scopes at that pc.
func (r *Reader) callSiteAt(caller Frame) (callSite, []*Scope, error) {
	scopes, err := r.ParamScopesAt(LookupPC(caller))
	if err != nil || len(scopes) == 0 {
		return callSite{}, nil, fmt.Errorf("%w: no function at the caller's pc", ErrNotFound)
	}
	fn := scopes[len(scopes)-1]
	ret := caller.PC() - caller.Bias()
	tail := isTailCall(caller)
	owner := r
	if fn.r != nil {
		owner = fn.r
	}
	owner.mu.Lock()
	defer owner.mu.Unlock()
	for _, cs := range fn.callSites {
		if cs.returnPC == ret && cs.tail == tail {
			return cs, scopes, nil
		}
	}
	return callSite{}, nil, fmt.Errorf("%w: no call site returns to %#x", ErrNotFound, caller.PC())
}

// callTargets returns the run-time addresses call site cs of the function
// of scopes may call (gdb's call_site::iterate_over_addresses). caller is
// the frame DW_AT_call_target is evaluated in (nil: it cannot be); symf
// resolves declared functions by name; bias is the module's load bias.
func (r *Reader) callTargets(cs callSite, scopes []*Scope, caller Frame, bias uint64, symf Frame, depth int) ([]uint64, error) {
	fn := scopes[len(scopes)-1]
	owner := r
	if fn.r != nil {
		owner = fn.r
	}
	if cs.origin != 0 {
		addr, name, err := owner.originOf(cs.origin)
		if err != nil {
			return nil, err
		}
		if name == "" {
			return []uint64{addr + bias}, nil
		}
		sf, ok := symf.(SymbolFrame)
		if !ok {
			return nil, fmt.Errorf("%w: cannot resolve %s", ErrNotFound, name)
		}
		as := sf.SymbolAddresses(name)
		if len(as) == 0 {
			return nil, fmt.Errorf("%w: no function %s for a call site target", ErrNotFound, name)
		}
		return as, nil
	}
	if cs.target != nil && caller != nil {
		ev, err := owner.evalDepth(cs.target, fn.unit, scopes[0], caller, depth+1)
		if err != nil || len(ev.pieces) > 0 {
			return nil, fmt.Errorf("%w: call target: %v", ErrNotFound, err)
		}
		if ev.Kind == dwarfexpr.KindMemory {
			return []uint64{ev.Address}, nil
		}
		if ev.Kind == dwarfexpr.KindRegister {
			// clang's indirect calls: DW_AT_call_target is
			// DW_OP_regN, the register holding the callee's address
			// (gdb reads the register's value).
			v, err := exprTarget{caller}.Register(ev.Register)
			if err != nil {
				return nil, fmt.Errorf("%w: call target: %v", ErrNotFound, err)
			}
			return []uint64{v}, nil
		}
		res := dwarfexpr.Result{Location: ev.Location}
		if v, ok := res.Word(); ok {
			return []uint64{v}, nil
		}
		return nil, fmt.Errorf("%w: call target is not an address", ErrNotFound)
	}
	return nil, fmt.Errorf("%w: the call site does not say what it calls", ErrNotFound)
}

// originOf resolves a call site's DW_AT_call_origin: the link-time entry of
// a function defined in this file, or the name (linkage name first) of a
// function it only declares.
func (r *Reader) originOf(off dwarf.Offset) (addr uint64, name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			err = errPanic("call origin", p)
		}
	}()
	e, _, err := r.entryAt(off)
	if err != nil {
		return 0, "", err
	}
	// The callee's DIE may only point at its declaration through
	// DW_AT_abstract_origin (GCC's LTO units do so for every function of
	// another file: a call to libc's clock_nanosleep from python3.11).
	decl, _ := r.follow(e, dwarf.AttrDeclaration).(bool)
	if decl && e.AttrField(dwarf.AttrSpecification) == nil && e.AttrField(dwarf.AttrLowpc) == nil && e.AttrField(dwarf.AttrRanges) == nil {
		name, _ = r.follow(e, dwarf.AttrLinkageName).(string)
		if name == "" {
			name, _ = r.follow(e, attrMIPSLinkageName).(string)
		}
		if name == "" {
			name = r.nameOf(e)
		}
		if name == "" {
			return 0, "", fmt.Errorf("%w: call origin without a name", ErrNotFound)
		}
		return 0, name, nil
	}
	rs, err := r.rangesOf(e)
	if err != nil || len(rs) == 0 {
		return 0, "", fmt.Errorf("%w: call origin without code", ErrNotFound)
	}
	return rs[0][0], "", nil
}

const attrMIPSLinkageName dwarf.Attr = 0x2007

// noSelfTailCall fails when the function entered at callee (run-time) can
// reach itself through tail calls (gdb's func_verify_no_selftailcall): its
// parameters' entry values would then be unreliable. Only functions of
// this Reader are followed; a tail call the walk cannot resolve fails too,
// as in gdb.
func (r *Reader) noSelfTailCall(callee uint64, f Frame) error {
	bias := f.Bias()
	todo := []uint64{callee}
	seen := map[uint64]bool{callee: true}
	for n := 0; len(todo) > 0; n++ {
		if n > maxTailCallWalk {
			return fmt.Errorf("%w: too many tail calls to follow", ErrNotFound)
		}
		addr := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if addr < bias {
			return fmt.Errorf("%w: tail call target %#x outside the module", ErrNotFound, addr)
		}
		scopes, err := r.ParamScopesAt(addr - bias)
		if err != nil || len(scopes) == 0 {
			return fmt.Errorf("%w: no function at tail call target %#x", ErrNotFound, addr)
		}
		fn := scopes[len(scopes)-1]
		if len(fn.Ranges) == 0 || fn.Ranges[0][0] != addr-bias {
			return fmt.Errorf("%w: tail call target %#x is not a function's entry", ErrNotFound, addr)
		}
		owner := r
		if fn.r != nil {
			owner = fn.r
		}
		owner.mu.Lock()
		var tails []callSite
		for _, cs := range fn.callSites {
			if cs.tail {
				tails = append(tails, cs)
			}
		}
		owner.mu.Unlock()
		for _, cs := range tails {
			targets, err := r.callTargets(cs, scopes, nil, bias, f, 0)
			if err != nil {
				return err
			}
			for _, t := range targets {
				if t == callee {
					return fmt.Errorf("%w: function at %#x can call itself via tail calls", ErrNotFound, callee)
				}
				if !seen[t] {
					seen[t] = true
					todo = append(todo, t)
				}
			}
		}
	}
	return nil
}

// parameterRef evaluates DW_OP_GNU_parameter_ref: the value the caller
// passed for the parameter whose DIE is at unit-relative offset off (a
// parameter an IPA clone receives from no register), as gdb does: through
// the call site's DW_AT_call_parameter.
func (r *Reader) parameterRef(off uint64, unit int, s *Scope, f Frame, depth int) (uint64, error) {
	if s == nil || unit < 0 || unit >= len(r.units) {
		return 0, fmt.Errorf("%w: DW_OP_GNU_parameter_ref outside a function", ErrOptimizedOut)
	}
	if depth >= maxEntryDepth {
		return 0, EntryLoopError{}
	}
	want := dwarf.Offset(r.units[unit].off + off)
	match := func(p callSiteParam) bool { return p.param == want }
	v, err := r.callerValue(s.Function(), f, entryKey{kind: 'p', what: uint64(want)}, match, depth)
	var loop EntryLoopError
	if errors.As(err, &loop) {
		return 0, loop
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrOptimizedOut, err)
	}
	return v, nil
}
