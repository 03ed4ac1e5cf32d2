package variables

import (
	"bytes"
	"debug/dwarf"
	"encoding/binary"
	"errors"
	"fmt"

	dw "github.com/sondedbg/sonde/dwarf"
	"github.com/sondedbg/sonde/dwarfexpr"
)

// calleeSaved are the x86-64 registers a callee preserves (SysV ABI): their
// value on entry to a function equals their value in the caller's frame.
var calleeSaved = map[uint64]bool{3: true, 6: true, 12: true, 13: true, 14: true, 15: true}

// entryValue recovers DW_OP_entry_value(expr): the value expr had when the
// function of scope s was entered. Two ways work without guessing: the
// caller's call site may say what it passed in that register
// (DW_TAG_call_site_parameter with DW_AT_call_value, evaluated in the
// caller's frame), or the register is callee-saved, so the caller's frame
// still holds it. Anything else is reported as optimized out.
func (r *Reader) entryValue(expr []byte, s *Scope, f Frame, depth int) (dwarfexpr.Value, error) {
	if depth >= maxEntryDepth {
		return dwarfexpr.Value{}, EntryLoopError{}
	}
	reg, ok := registerOp(expr)
	if !ok {
		return r.entryExpression(expr, f, depth)
	}
	caller, cr := f.Caller()
	if caller == nil || cr == nil {
		return dwarfexpr.Value{}, fmt.Errorf("%w: entry value needs the caller's frame", ErrOptimizedOut)
	}
	if s != nil {
		// As gdb does: the call site must be one that calls this function.
		match := func(p callSiteParam) bool {
			preg, ok := registerOp(p.loc)
			return ok && preg == reg || bytes.Equal(p.loc, expr)
		}
		v, err := r.callerValue(s.Function(), f, entryKey{kind: 'r', what: reg}, match, depth)
		var loop EntryLoopError
		if errors.As(err, &loop) {
			return dwarfexpr.Value{}, loop
		}
		if err == nil {
			return dwarfexpr.Value{Bits: v}, nil
		}
	} else if v, err := cr.callSiteValue(expr, reg, caller, depth); err == nil {
		return dwarfexpr.Value{Bits: v}, nil
	}
	if calleeSaved[reg] {
		b, err := caller.Register(int(reg))
		if err == nil {
			var w [8]byte
			copy(w[:], b)
			return dwarfexpr.Value{Bits: binary.LittleEndian.Uint64(w[:])}, nil
		}
	}
	return dwarfexpr.Value{}, fmt.Errorf("%w: entry value of register %d is not recoverable", ErrOptimizedOut, reg)
}

// registerOp recognizes DW_OP_regN, DW_OP_regx N and (as gdb's
// dwarf_block_to_dwarf_reg does, for entry values) DW_OP_regval_type N T.
func registerOp(expr []byte) (uint64, bool) {
	if len(expr) >= 3 && (expr[0] == 0xa5 || expr[0] == 0xf5) {
		c := dw.NewCursor("expression", expr, 1)
		v := c.Uleb()
		c.Uleb()
		return v, c.Err() == nil && c.Remaining() == 0
	}
	if len(expr) == 1 && expr[0] >= 0x50 && expr[0] <= 0x6f {
		return uint64(expr[0] - 0x50), true
	}
	if len(expr) >= 2 && expr[0] == 0x90 {
		c := dw.NewCursor("expression", expr, 1)
		v := c.Uleb()
		return v, c.Err() == nil && c.Remaining() == 0
	}
	return 0, false
}

// callSiteValue finds, in the function of the caller frame, the call site
// returning to the caller's pc and evaluates what it passed in register reg.
func (r *Reader) callSiteValue(loc []byte, reg uint64, caller Frame, depth int) (uint64, error) {
	scopes, err := r.ParamScopesAt(LookupPC(caller))
	if err != nil || len(scopes) == 0 {
		return 0, fmt.Errorf("%w: no function at the caller's pc", ErrNotFound)
	}
	fn := scopes[len(scopes)-1]
	ret := caller.PC() - caller.Bias()
	r.mu.Lock()
	var value []byte
	for _, cs := range fn.callSites {
		if cs.returnPC != ret {
			continue
		}
		for _, p := range cs.params {
			if preg, ok := registerOp(p.loc); ok && preg == reg || bytes.Equal(p.loc, loc) {
				value = p.value
			}
		}
	}
	r.mu.Unlock()
	if value == nil {
		return 0, fmt.Errorf("%w: call site does not record register %d", ErrNotFound, reg)
	}
	owner := r
	if fn.r != nil {
		owner = fn.r // a split unit's Reader
	}
	ev, err := owner.evalDepth(value, fn.unit, scopes[0], caller, depth+1)
	if err != nil {
		return 0, err
	}
	if len(ev.pieces) > 0 {
		return 0, fmt.Errorf("%w: composite call value", ErrOptimizedOut)
	}
	res := dwarfexpr.Result{Location: ev.Location}
	if v, ok := res.Word(); ok {
		return v, nil
	}
	if ev.Kind == dwarfexpr.KindRegister {
		return exprTarget{caller}.Register(ev.Register)
	}
	return 0, fmt.Errorf("%w: call value is not a value", ErrOptimizedOut)
}

// maxResolveDepth bounds nested variable-length dimensions.
const maxResolveDepth = 16

// ResolveType returns t with the lengths of variable-length array dimensions
// computed in frame f (s is the scope the variable is declared in); t itself
// when it has none. A bound that cannot be computed leaves the length
// unknown. A struct, class or union the unit only declares resolves to its
// definition elsewhere in the module (Complete).
func (r *Reader) ResolveType(t *Type, s *Scope, f Frame) (*Type, error) {
	if s != nil && s.r != nil && s.r != r {
		return s.r.ResolveType(t, s, f)
	}
	if st := t.Strip(); st != nil && st.Declaration {
		// A class this unit only declares (GCC describes a class with a
		// vtable fully only in the unit of its key function: xmltest.cpp's
		// XMLDocument doc): its definition in another unit, as gdb reads it.
		return r.Complete(t), nil
	}
	return r.resolve(t, s, f, 0)
}

func (r *Reader) resolve(t *Type, s *Scope, f Frame, depth int) (*Type, error) {
	if t == nil || t.Kind != KindArray || depth > maxResolveDepth {
		return t, nil
	}
	elem, err := r.resolve(t.Elem, s, f, depth+1)
	if err != nil {
		return t, err
	}
	if t.Bound == nil && elem == t.Elem {
		return t, nil
	}
	c := *t
	c.Elem = elem
	// The resolved type is no longer what the DIE describes (its length is
	// this frame's): it is a made-up type.
	c.Offset, c.Dim = 0, 0
	if t.Bound != nil {
		n, err := r.boundValue(t.Bound, s, f)
		if err != nil {
			return t, err
		}
		if t.Bound.IsCount {
			c.Count = n
		} else {
			c.Count = n - t.Lower + 1
		}
		if c.Count < 0 || c.Count > maxArrayCount {
			c.Count = -1
		}
		c.Bound = nil
	}
	return &c, nil
}

func (r *Reader) boundValue(b *DynamicBound, s *Scope, f Frame) (int64, error) {
	unit := -1
	if s != nil {
		unit = s.unit
	}
	if b.Expr != nil {
		ev, err := r.evalLocation(b.Expr, unit, s, f)
		if err != nil {
			return 0, err
		}
		res := dwarfexpr.Result{Location: ev.Location}
		if v, ok := res.Word(); ok {
			return int64(v), nil
		}
		return 0, fmt.Errorf("%w: array bound is not a value", ErrOptimizedOut)
	}
	v, err := r.VariableAt(b.Var)
	if err != nil {
		return 0, err
	}
	v.Scope = s
	val, err := r.Read(v, f)
	if err != nil {
		return 0, err
	}
	var w [8]byte
	copy(w[:], val.Bytes)
	n := int64(binary.LittleEndian.Uint64(w[:]))
	if len(val.Bytes) > 0 && len(val.Bytes) < 8 && v.Type.IsSigned() {
		shift := 64 - 8*uint(len(val.Bytes))
		n = n << shift >> shift
	}
	return n, nil
}

// VariableAt decodes the variable or parameter DIE at off (its Scope is
// nil: set it before reading a local).
func (r *Reader) VariableAt(die uint64) (v *Variable, err error) {
	if c, real, ok := r.child(die); ok {
		return c.VariableAt(real)
	}
	off := r.real(die)
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, errPanic("decode variable", p)
		}
	}()
	e, _, err := r.entryAt(off)
	if err != nil {
		return nil, err
	}
	if e.Tag != dwarf.TagVariable && e.Tag != dwarf.TagFormalParameter && e.Tag != dwarf.TagMember {
		return nil, bad("decode variable", uint64(off), "DIE with tag %v is not a variable", e.Tag)
	}
	return r.variable(e, r.unitOf(off)), nil
}

// entryExpression evaluates an entry value that is not just a register,
// typically a stack slot (DW_OP_breg7 off; DW_OP_deref): as the function's
// entry saw it, the stack pointer was the CFA minus the return address,
// callee-saved registers held what the caller's frame holds, and memory
// above the CFA (the caller's slots and stack arguments) is unchanged.
// Anything needing another register is optimized out.
func (r *Reader) entryExpression(expr []byte, f Frame, depth int) (dwarfexpr.Value, error) {
	cfa, err := f.CFA()
	if err != nil {
		return dwarfexpr.Value{}, fmt.Errorf("%w: entry value needs the frame's CFA: %v", ErrOptimizedOut, err)
	}
	caller, _ := f.Caller()
	ef := entryFrame{Frame: f, sp: cfa - 8, caller: caller}
	var m dwarfexpr.Machine
	res, err := m.Eval(expr, exprTarget{ef}, &dwarfexpr.Config{AddrSize: 8, MaxSteps: 10000, AddrBias: f.Bias()})
	if err != nil {
		return dwarfexpr.Value{}, fmt.Errorf("%w: entry value: %v", ErrOptimizedOut, err)
	}
	if len(res.Pieces) == 0 {
		if v, ok := res.Word(); ok {
			return dwarfexpr.Value{Bits: v}, nil
		}
	}
	return dwarfexpr.Value{}, fmt.Errorf("%w: entry value is not a single value", ErrOptimizedOut)
}

// entryFrame is a frame's registers as they were on entry to its function,
// as far as they are known.
type entryFrame struct {
	Frame
	sp     uint64
	caller Frame
}

func (e entryFrame) Register(reg int) ([]byte, error) {
	switch {
	case reg == 7:
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, e.sp)
		return b, nil
	case calleeSaved[uint64(reg)] && e.caller != nil:
		return e.caller.Register(reg)
	}
	return nil, fmt.Errorf("register %d at the function's entry is not known", reg)
}
