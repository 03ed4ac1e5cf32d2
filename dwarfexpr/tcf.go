package dwarfexpr

// A TCF client that unwinds or reads variables by itself gets locations as
// the Symbols service's location commands (ISymbols.CMD_* of the TCF
// protocol; the C agent's symbols.h) rather than DWARF: a small stack
// machine whose opcodes are followed by their arguments, written as one flat
// list ([2,"R6",1,16,5] is "read rbp, push 16, add"). TCFCommands writes the
// common DWARF expressions that way; what it cannot write, the service passes
// whole as TCFLocation.

// TCF location command opcodes.
const (
	TCFNumber   = 1  // push the argument
	TCFRdReg    = 2  // push the register named by the argument
	TCFFP       = 3  // push the frame address
	TCFRdMem    = 4  // pop an address, push the memory there: size, big-endian
	TCFAdd      = 5  // binary operators: pop two, push one
	TCFSub      = 6  //
	TCFMul      = 7  //
	TCFDiv      = 8  //
	TCFAnd      = 9  //
	TCFOr       = 10 //
	TCFXor      = 11 //
	TCFNeg      = 12 // unary minus
	TCFGE       = 13 //
	TCFGT       = 14 //
	TCFLE       = 15 //
	TCFLT       = 16 //
	TCFShl      = 17 //
	TCFShr      = 18 //
	TCFArg      = 19 // push an argument of the location (a member's base object)
	TCFLocation = 20 // evaluate the DWARF expression argument (with its parameters)
)

// tcfBinary maps the DWARF operators with a TCF counterpart taking two
// operands to it.
var tcfBinary = map[byte]int{
	OpPlus: TCFAdd, OpMinus: TCFSub, OpMul: TCFMul, OpDiv: TCFDiv, OpAnd: TCFAnd, OpOr: TCFOr, OpXor: TCFXor,
	OpGe: TCFGE, OpGt: TCFGT, OpLe: TCFLE, OpLt: TCFLT, OpShl: TCFShl, OpShr: TCFShr,
}

// TCFOptions says how TCFCommands names registers and which expressions it
// writes.
type TCFOptions struct {
	// Reg is the client's ID of DWARF register n; "" (or a nil Reg) when it
	// has none, and then an expression using it is not written.
	Reg func(n int) string
	// Place writes only an expression of one operation naming a place, as
	// variable locations are written: DW_OP_addr (plus AddrBias),
	// DW_OP_fbreg (the frame address plus the offset) and DW_OP_bregN, the
	// offset added even when it is zero. Without Place the operations of
	// call-frame rules are written: literals and constants, DW_OP_bregN and
	// DW_OP_bregx (a zero offset left out), DW_OP_plus_uconst, the
	// arithmetic, comparison and shift operators, DW_OP_neg, DW_OP_deref,
	// DW_OP_deref_size and DW_OP_call_frame_cfa.
	Place bool
	// AddrBias is added to DW_OP_addr's address (the module's load bias).
	AddrBias uint64
}

// TCFCommands writes a DWARF expression as TCF location commands, one flat
// list. ok is false when the expression has an operation without a command
// counterpart (stack manipulation, branches, ...), is truncated, or uses a
// register without an ID: the caller then passes it as TCFLocation.
func TCFCommands(expr []byte, o TCFOptions) (cmds []any, ok bool) {
	r := &reader{b: expr}
	if o.Place {
		cmds, ok = tcfPlace(r, o)
	} else {
		ok = true
		for ok && r.off < len(r.b) {
			cmds, ok = tcfFrameOp(r, o, cmds)
		}
	}
	if !ok || r.bad || r.off != len(r.b) {
		return nil, false
	}
	return cmds, true
}

// reg is the ID of DWARF register n, "" when there is none.
func (o TCFOptions) reg(n uint64) string {
	if o.Reg == nil || n > 1<<16 {
		return ""
	}
	return o.Reg(int(n))
}

// tcfPlace writes the one operation of a variable's place.
func tcfPlace(r *reader, o TCFOptions) ([]any, bool) {
	op := r.u8()
	switch {
	case op == OpAddr:
		return []any{TCFNumber, r.fixed(8) + o.AddrBias}, true
	case op == OpFbreg:
		return []any{TCFFP, TCFNumber, r.sleb(), TCFAdd}, true
	case op >= OpBreg0 && op < OpBreg0+32:
		off := r.sleb()
		if rid := o.reg(uint64(op - OpBreg0)); rid != "" {
			return []any{TCFRdReg, rid, TCFNumber, off, TCFAdd}, true
		}
	}
	return nil, false
}

// tcfFrameOp appends the commands of the next operation of a call-frame
// rule.
func tcfFrameOp(r *reader, o TCFOptions, cmds []any) ([]any, bool) {
	op := r.u8()
	switch {
	case op >= OpLit0 && op < OpLit0+32:
		return append(cmds, TCFNumber, int64(op-OpLit0)), true
	case op >= OpBreg0 && op < OpBreg0+32:
		return tcfRegPlus(cmds, o.reg(uint64(op-OpBreg0)), r.sleb())
	case op == OpBregx:
		n := r.uleb()
		return tcfRegPlus(cmds, o.reg(n), r.sleb())
	case op == OpConstu:
		return append(cmds, TCFNumber, r.uleb()), true
	case op == OpConsts:
		return append(cmds, TCFNumber, r.sleb()), true
	case op >= OpConst1u && op <= OpConst8s:
		size := 1 << ((op - OpConst1u) / 2)
		v := r.fixed(size)
		if (op-OpConst1u)%2 == 1 && size < 8 {
			return append(cmds, TCFNumber, sext(v, size)), true
		}
		return append(cmds, TCFNumber, v), true
	case op == OpPlusUconst:
		return append(cmds, TCFNumber, r.uleb(), TCFAdd), true
	case op == OpDeref:
		return append(cmds, TCFRdMem, 8, false), true
	case op == OpDerefSize:
		size := r.u8()
		if size == 0 || size > 8 {
			return nil, false
		}
		return append(cmds, TCFRdMem, int(size), false), true
	case op == OpNeg:
		return append(cmds, TCFNeg), true
	case op == OpCallFrameCFA:
		return append(cmds, TCFFP), true
	}
	if cmd, ok := tcfBinary[op]; ok {
		return append(cmds, cmd), true
	}
	return nil, false
}

// tcfRegPlus appends "register plus offset", the offset left out when zero.
func tcfRegPlus(cmds []any, rid string, off int64) ([]any, bool) {
	if rid == "" {
		return nil, false
	}
	cmds = append(cmds, TCFRdReg, rid)
	if off != 0 {
		cmds = append(cmds, TCFNumber, off, TCFAdd)
	}
	return cmds, true
}
