package cfi

// Call-frame instructions (DWARF 5, section 6.4.2) and GNU extensions.
const (
	cfaAdvanceLoc       = 0x40 // high two bits
	cfaOffset           = 0x80
	cfaRestore          = 0xc0
	cfaNop              = 0x00
	cfaSetLoc           = 0x01
	cfaAdvanceLoc1      = 0x02
	cfaAdvanceLoc2      = 0x03
	cfaAdvanceLoc4      = 0x04
	cfaOffsetExtended   = 0x05
	cfaRestoreExtended  = 0x06
	cfaUndefined        = 0x07
	cfaSameValue        = 0x08
	cfaRegister         = 0x09
	cfaRememberState    = 0x0a
	cfaRestoreState     = 0x0b
	cfaDefCFA           = 0x0c
	cfaDefCFARegister   = 0x0d
	cfaDefCFAOffset     = 0x0e
	cfaDefCFAExpression = 0x0f
	cfaExpression       = 0x10
	cfaOffsetExtendedSF = 0x11
	cfaDefCFASF         = 0x12
	cfaDefCFAOffsetSF   = 0x13
	cfaValOffset        = 0x14
	cfaValOffsetSF      = 0x15
	cfaValExpression    = 0x16
	cfaMIPSAdvanceLoc8  = 0x1d
	cfaGNUWindowSave    = 0x2d // also AArch64 negate_ra_state: no effect on x86-64 rows
	cfaGNUArgsSize      = 0x2e
	cfaGNUNegOffsetExt  = 0x2f
)

// maxStateDepth bounds DW_CFA_remember_state nesting.
const maxStateDepth = 32

// savedState is what remember_state saves: the register rules and, like GDB
// and libgcc, the CFA rule too.
type savedState struct {
	cfa  Rule
	regs [NumRegs]Rule
}

// RowFor finds the FDE covering pc and computes its row into row.
func (t *Table) RowFor(pc uint64, row *Row) error {
	f, err := t.FindFDE(pc)
	if err != nil {
		return err
	}
	return t.Row(&f, pc, row)
}

// Row runs the CIE's and f's instructions up to pc and stores the row
// in effect at pc into row.
func (t *Table) Row(f *FDE, pc uint64, row *Row) error {
	*row = Row{RAReg: uint16(f.CIE.RAReg), SignalFrame: f.CIE.SignalFrame, FDEOffset: f.Offset, Section: t.section}
	if f.CIE.RAReg >= NumRegs {
		return t.err(f.CIE.Offset, ErrBadCIE, "return address column out of range")
	}
	x := executor{t: t, row: row, loc: f.PCBegin, pc: pc,
		codeAlign: f.CIE.CodeAlign, dataAlign: f.CIE.DataAlign, addrSize: int(f.CIE.AddrSize), enc: f.CIE.FDEEncoding}
	if t.section == DebugFrame && !f.CIE.hasAugData {
		x.enc = EncAbsptr
	}
	row.Start = f.PCBegin
	row.End = f.PCEnd
	// The CIE's instructions set up the initial rules that DW_CFA_restore returns to.
	if err := x.run(f.CIE.Instructions, f.CIE.Offset, true); err != nil {
		return err
	}
	x.initial = row.Regs
	if err := x.run(f.Instructions, f.Offset, false); err != nil && err != errStop {
		return err
	}
	return nil
}

type executor struct {
	t   *Table
	row *Row
	// The CIE's parameters, copied so that the FDE itself does not escape.
	codeAlign uint64
	dataAlign int64
	addrSize  int
	enc       uint8
	loc       uint64 // address the rules being built apply from
	pc        uint64
	initial   [NumRegs]Rule
	stack     []savedState
}

type stopErr struct{}

func (stopErr) Error() string { return "stop" }

var errStop error = stopErr{}

// advance moves the location; when it passes pc the row is complete.
func (x *executor) advance(to uint64) error {
	if to > x.pc {
		x.row.End = to
		return errStop
	}
	x.loc = to
	x.row.Start = to
	return nil
}

func (x *executor) run(ins []byte, entryOff uint64, inCIE bool) error {
	t, row := x.t, x.row
	d := buf{b: ins, end: len(ins)}
	opStart := 0 // offset of the instruction being run, for errors
	bad := func(cause error, detail string) error {
		// Instructions alias the section, so their offset in it is the
		// difference of the capacities.
		base := entryOff
		if len(ins) > 0 {
			base = uint64(cap(t.data) - cap(ins))
		}
		return t.err(base+uint64(opStart), cause, detail)
	}
	setReg := func(reg uint64, r Rule) {
		if reg < NumRegs {
			row.Regs[reg] = r
		}
	}
	for d.off < d.end {
		opStart = d.off
		op := d.u8()
		var err error
		switch op & 0xc0 {
		case cfaAdvanceLoc:
			err = x.advance(x.loc + uint64(op&0x3f)*x.codeAlign)
		case cfaOffset:
			setReg(uint64(op&0x3f), Rule{Kind: RuleOffset, Offset: int64(d.uleb()) * x.dataAlign})
		case cfaRestore:
			reg := uint64(op & 0x3f)
			if reg < NumRegs {
				row.Regs[reg] = x.initial[reg]
			}
		default:
			switch op {
			case cfaNop:
			case cfaSetLoc:
				bases := t.bases
				v, ind, ok := d.pointer(x.enc, x.addrSize, &bases)
				if ok && ind && t.readPointer != nil {
					var err error
					v, err = t.readPointer(v)
					ind = err != nil
				}
				if !ok || ind {
					return bad(ErrBadEncoding, "DW_CFA_set_loc")
				}
				if v < x.loc {
					return bad(ErrBadRule, "DW_CFA_set_loc moves backwards")
				}
				err = x.advance(v)
			case cfaAdvanceLoc1:
				err = x.advance(x.loc + d.fixed(1)*x.codeAlign)
			case cfaAdvanceLoc2:
				err = x.advance(x.loc + d.fixed(2)*x.codeAlign)
			case cfaAdvanceLoc4:
				err = x.advance(x.loc + d.fixed(4)*x.codeAlign)
			case cfaMIPSAdvanceLoc8:
				err = x.advance(x.loc + d.fixed(8)*x.codeAlign)
			case cfaOffsetExtended:
				reg := d.uleb()
				setReg(reg, Rule{Kind: RuleOffset, Offset: int64(d.uleb()) * x.dataAlign})
			case cfaOffsetExtendedSF:
				reg := d.uleb()
				setReg(reg, Rule{Kind: RuleOffset, Offset: d.sleb() * x.dataAlign})
			case cfaGNUNegOffsetExt:
				reg := d.uleb()
				setReg(reg, Rule{Kind: RuleOffset, Offset: -int64(d.uleb()) * x.dataAlign})
			case cfaValOffset:
				reg := d.uleb()
				setReg(reg, Rule{Kind: RuleValOffset, Offset: int64(d.uleb()) * x.dataAlign})
			case cfaValOffsetSF:
				reg := d.uleb()
				setReg(reg, Rule{Kind: RuleValOffset, Offset: d.sleb() * x.dataAlign})
			case cfaRestoreExtended:
				reg := d.uleb()
				if reg < NumRegs {
					row.Regs[reg] = x.initial[reg]
				}
			case cfaUndefined:
				setReg(d.uleb(), Rule{Kind: RuleUndefined})
			case cfaSameValue:
				setReg(d.uleb(), Rule{Kind: RuleSameValue})
			case cfaRegister:
				reg := d.uleb()
				r2 := d.uleb()
				if r2 > 0xffff {
					return bad(ErrBadRule, "register number out of range")
				}
				setReg(reg, Rule{Kind: RuleRegister, Reg: uint16(r2)})
			case cfaRememberState:
				if len(x.stack) >= maxStateDepth {
					return bad(ErrStateStack, "too deep")
				}
				x.stack = append(x.stack, savedState{cfa: row.CFA, regs: row.Regs})
			case cfaRestoreState:
				if len(x.stack) == 0 {
					return bad(ErrStateStack, "restore without remember")
				}
				s := &x.stack[len(x.stack)-1]
				row.CFA, row.Regs = s.cfa, s.regs
				x.stack = x.stack[:len(x.stack)-1]
			case cfaDefCFA:
				reg := d.uleb()
				off := d.uleb()
				if reg > 0xffff {
					return bad(ErrBadRule, "register number out of range")
				}
				row.CFA = Rule{Kind: RuleCFARegOffset, Reg: uint16(reg), Offset: int64(off)}
			case cfaDefCFASF:
				reg := d.uleb()
				off := d.sleb() * x.dataAlign
				if reg > 0xffff {
					return bad(ErrBadRule, "register number out of range")
				}
				row.CFA = Rule{Kind: RuleCFARegOffset, Reg: uint16(reg), Offset: off}
			case cfaDefCFARegister:
				reg := d.uleb()
				if reg > 0xffff {
					return bad(ErrBadRule, "register number out of range")
				}
				if row.CFA.Kind == RuleCFAExpression {
					return bad(ErrBadRule, "DW_CFA_def_cfa_register after an expression CFA")
				}
				row.CFA.Kind, row.CFA.Reg = RuleCFARegOffset, uint16(reg)
			case cfaDefCFAOffset:
				off := d.uleb()
				if row.CFA.Kind != RuleCFARegOffset {
					return bad(ErrBadRule, "DW_CFA_def_cfa_offset without a register CFA")
				}
				row.CFA.Offset = int64(off)
			case cfaDefCFAOffsetSF:
				off := d.sleb() * x.dataAlign
				if row.CFA.Kind != RuleCFARegOffset {
					return bad(ErrBadRule, "DW_CFA_def_cfa_offset_sf without a register CFA")
				}
				row.CFA.Offset = off
			case cfaDefCFAExpression:
				n := d.uleb()
				e := d.bytesN(n)
				row.CFA = Rule{Kind: RuleCFAExpression, Expr: e}
			case cfaExpression, cfaValExpression:
				reg := d.uleb()
				n := d.uleb()
				e := d.bytesN(n)
				k := RuleExpression
				if op == cfaValExpression {
					k = RuleValExpression
				}
				setReg(reg, Rule{Kind: k, Expr: e})
			case cfaGNUArgsSize:
				row.ArgsSize = d.uleb()
			case cfaGNUWindowSave:
			default:
				return bad(ErrBadOpcode, "DW_CFA_0x"+hex(uint64(op))[2:])
			}
		}
		if d.bad {
			return bad(ErrTruncated, "call-frame instruction operand")
		}
		if err != nil {
			if inCIE && err == errStop {
				// A CIE that advances past pc: the remaining CIE rules do not apply.
				return nil
			}
			return err
		}
	}
	return nil
}

func (d *buf) bytesN(n uint64) []byte {
	if n > uint64(d.avail()) {
		d.bad = true
		d.off = d.end
		return nil
	}
	p := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return p
}
