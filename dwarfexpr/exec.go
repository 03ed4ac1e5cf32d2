package dwarfexpr

import (
	"encoding/binary"
	"errors"
)

// run executes one expression (the top-level one or a DW_OP_call target).
func (m *Machine) run(expr []byte, npieces *int) error {
	r := reader{b: expr}
	for r.off < len(expr) {
		start := r.off
		op := r.u8()
		m.steps++
		if m.steps > m.limit {
			return &Error{Offset: start, Op: op, Err: ErrStepLimit}
		}
		fail := func(err error) error { return &Error{Offset: start, Op: op, Err: err} }
		if m.hasLoc && op != OpPiece && op != OpBitPiece {
			return fail(ErrBadComposition)
		}
		var err error
		switch {
		case op >= OpLit0 && op < OpLit0+32:
			err = m.push(uint64(op - OpLit0))
		case op >= OpReg0 && op < OpReg0+32:
			m.loc = Location{Kind: KindRegister, Register: uint64(op - OpReg0)}
			m.hasLoc = true
		case op >= OpBreg0 && op < OpBreg0+32:
			off := r.sleb()
			if r.bad {
				break
			}
			err = m.pushReg(uint64(op-OpBreg0), off)
		default:
			err = m.exec(op, &r, npieces, start)
		}
		if r.bad {
			return fail(ErrTruncated)
		}
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return err
			}
			return fail(err)
		}
	}
	return nil
}

func (m *Machine) push(v uint64) error {
	if m.sp >= m.depth {
		return ErrStackOverflow
	}
	m.stack[m.sp] = Value{Bits: v & m.mask}
	m.sp++
	return nil
}

func (m *Machine) pushValue(v Value) error {
	if m.sp >= m.depth {
		return ErrStackOverflow
	}
	m.stack[m.sp] = v
	m.sp++
	return nil
}

func (m *Machine) pop() (Value, error) {
	if m.sp == 0 {
		return Value{}, ErrStackUnderflow
	}
	m.sp--
	return m.stack[m.sp], nil
}

func (m *Machine) register(reg uint64) (uint64, error) {
	if m.target == nil {
		return 0, ErrUnknownRegister
	}
	return m.target.Register(reg)
}

func (m *Machine) pushReg(reg uint64, off int64) error {
	v, err := m.register(reg)
	if err != nil {
		return err
	}
	return m.push(v + uint64(off))
}

func (m *Machine) read(addr uint64, size int) (uint64, error) {
	if size <= 0 || size > 8 {
		return 0, ErrUnsupported
	}
	var buf [8]byte
	if m.target == nil {
		return 0, &MemoryError{Addr: addr, Size: size}
	}
	n, err := m.target.ReadMemory(buf[:size], addr)
	if n < size {
		return 0, &MemoryError{Addr: addr, Size: size, Err: err}
	}
	return binary.LittleEndian.Uint64(buf[:]), nil
}

func (m *Machine) baseType(off uint64) (BaseType, error) {
	if off == 0 {
		return BaseType{}, nil
	}
	if m.cfg.BaseType == nil {
		return BaseType{}, ErrNeedsContext
	}
	t, err := m.cfg.BaseType(off)
	if err != nil {
		return BaseType{}, err
	}
	if t.Size == 0 || t.Size > 8 {
		return BaseType{}, ErrUnsupported
	}
	t.Offset = off
	return t, nil
}

func (m *Machine) sizeOf(t BaseType) int {
	if t.IsGeneric() {
		return m.addr
	}
	return int(t.Size)
}

func maskTo(v uint64, size int) uint64 {
	if size >= 8 {
		return v
	}
	return v & (1<<(8*uint(size)) - 1)
}

func (m *Machine) exec(op byte, r *reader, npieces *int, start int) error {
	cfg := m.cfg
	switch op {
	case OpAddr:
		return m.push(r.fixed(m.addr) + cfg.addrBias())
	case OpDeref, OpDerefSize, OpXderef, OpXderefSize:
		size := m.addr
		if op == OpDerefSize || op == OpXderefSize {
			size = int(r.u8())
			if size == 0 || size > m.addr {
				return ErrUnsupported
			}
		}
		a, err := m.pop()
		if err != nil {
			return err
		}
		if op == OpXderef || op == OpXderefSize {
			if _, err := m.pop(); err != nil { // address space identifier
				return err
			}
		}
		v, err := m.read(a.Bits&m.mask, size)
		if err != nil {
			return err
		}
		return m.push(maskTo(v, size))
	case OpDerefType, OpGNUDerefType, OpXderefType:
		size := int(r.u8())
		t, err := m.baseType(r.uleb())
		if err != nil || r.bad {
			return err
		}
		a, err := m.pop()
		if err != nil {
			return err
		}
		if op == OpXderefType {
			if _, err := m.pop(); err != nil {
				return err
			}
		}
		if size == 0 || size > 8 || size != m.sizeOf(t) && !t.IsGeneric() {
			return ErrUnsupported
		}
		v, err := m.read(a.Bits&m.mask, size)
		if err != nil {
			return err
		}
		return m.pushValue(Value{Bits: maskTo(v, size), Type: t})
	case OpConst1u:
		return m.push(r.fixed(1))
	case OpConst1s:
		return m.push(uint64(sext(r.fixed(1), 1)))
	case OpConst2u:
		return m.push(r.fixed(2))
	case OpConst2s:
		return m.push(uint64(sext(r.fixed(2), 2)))
	case OpConst4u:
		return m.push(r.fixed(4))
	case OpConst4s:
		return m.push(uint64(sext(r.fixed(4), 4)))
	case OpConst8u, OpConst8s:
		return m.push(r.fixed(8))
	case OpConstu:
		return m.push(r.uleb())
	case OpConsts:
		return m.push(uint64(r.sleb()))
	case OpDup:
		if m.sp == 0 {
			return ErrStackUnderflow
		}
		return m.pushValue(m.stack[m.sp-1])
	case OpDrop:
		_, err := m.pop()
		return err
	case OpOver:
		if m.sp < 2 {
			return ErrStackUnderflow
		}
		return m.pushValue(m.stack[m.sp-2])
	case OpPick:
		i := int(r.u8())
		if i >= m.sp {
			return ErrStackUnderflow
		}
		return m.pushValue(m.stack[m.sp-1-i])
	case OpSwap:
		if m.sp < 2 {
			return ErrStackUnderflow
		}
		m.stack[m.sp-1], m.stack[m.sp-2] = m.stack[m.sp-2], m.stack[m.sp-1]
		return nil
	case OpRot:
		if m.sp < 3 {
			return ErrStackUnderflow
		}
		s := m.stack[m.sp-3 : m.sp]
		// The top becomes the third entry; the second becomes the top.
		s[0], s[1], s[2] = s[2], s[0], s[1]
		return nil
	case OpAbs, OpNeg, OpNot:
		return m.unary(op)
	case OpAnd, OpDiv, OpMinus, OpMod, OpMul, OpOr, OpPlus, OpShl, OpShr, OpShra, OpXor,
		OpEq, OpGe, OpGt, OpLe, OpLt, OpNe:
		return m.binary(op)
	case OpPlusUconst:
		c := r.uleb()
		if m.sp == 0 {
			return ErrStackUnderflow
		}
		top := &m.stack[m.sp-1]
		top.Bits = maskTo(top.Bits+c, m.sizeOf(top.Type))
		return nil
	case OpBra, OpSkip:
		d := int64(int16(r.fixed(2)))
		if r.bad {
			return nil
		}
		if op == OpBra {
			v, err := m.pop()
			if err != nil {
				return err
			}
			if maskTo(v.Bits, m.sizeOf(v.Type)) == 0 {
				return nil
			}
		}
		target := int64(r.off) + d
		if target < 0 || target > int64(len(r.b)) {
			return ErrBadBranch
		}
		r.off = int(target)
		return nil
	case OpRegx:
		reg := r.uleb()
		m.loc = Location{Kind: KindRegister, Register: reg}
		m.hasLoc = true
		return nil
	case OpBregx:
		reg := r.uleb()
		off := r.sleb()
		if r.bad {
			return nil
		}
		return m.pushReg(reg, off)
	case OpFbreg:
		off := r.sleb()
		if r.bad {
			return nil
		}
		if cfg.FrameBase == nil {
			return ErrNeedsContext
		}
		fb, err := cfg.FrameBase()
		if err != nil {
			return err
		}
		return m.push(fb + uint64(off))
	case OpPiece, OpBitPiece:
		var size, offset uint64
		if op == OpPiece {
			size = r.uleb() * 8
		} else {
			size = r.uleb()
			offset = r.uleb()
		}
		if r.bad {
			return nil
		}
		if m.calls > 0 {
			return ErrBadComposition
		}
		p := Piece{Location: m.finish(), SizeBits: size, OffsetBits: offset}
		if *npieces < len(m.pieces) {
			m.pieces[*npieces] = p
		} else {
			if *npieces == len(m.pieces) {
				m.extra = append(m.extra[:0], m.pieces[:]...)
			}
			if len(m.extra) >= 4096 {
				return ErrUnsupported
			}
			m.extra = append(m.extra, p)
		}
		*npieces++
		m.afterPiece = r.off
		return nil
	case OpNop, OpGNUUninit:
		return nil
	case OpPushObjectAddress:
		if cfg.ObjectAddress == nil {
			return ErrNeedsContext
		}
		v, err := cfg.ObjectAddress()
		if err != nil {
			return err
		}
		return m.push(v)
	case OpCall2, OpCall4, OpCallRef:
		var off uint64
		switch op {
		case OpCall2:
			off = r.fixed(2)
		case OpCall4:
			off = r.fixed(4)
		default:
			off = r.fixed(m.offsetSize())
		}
		if r.bad {
			return nil
		}
		if cfg.Call == nil {
			return ErrNeedsContext
		}
		max := cfg.MaxCalls
		if max <= 0 {
			max = 16
		}
		if m.calls >= max {
			return ErrStepLimit
		}
		sub, err := cfg.Call(off, op == OpCallRef)
		if err != nil {
			return err
		}
		m.calls++
		err = m.run(sub, npieces)
		m.calls--
		return err
	case OpFormTLSAddress, OpGNUPushTLSAddress:
		v, err := m.pop()
		if err != nil {
			return err
		}
		if cfg.TLSAddress == nil {
			return ErrNeedsContext
		}
		a, err := cfg.TLSAddress(v.Bits)
		if err != nil {
			return err
		}
		return m.push(a)
	case OpCallFrameCFA:
		if cfg.CFA == nil {
			return ErrNeedsContext
		}
		v, err := cfg.CFA()
		if err != nil {
			return err
		}
		return m.push(v)
	case OpImplicitValue:
		n := r.uleb()
		b := r.bytes(n)
		if r.bad {
			return nil
		}
		m.loc = Location{Kind: KindImplicit, Bytes: b}
		m.hasLoc = true
		return nil
	case OpStackValue:
		if m.sp == 0 {
			return ErrStackUnderflow
		}
		m.loc = Location{Kind: KindValue, Value: m.stack[m.sp-1]}
		m.hasLoc = true
		return nil
	case OpImplicitPointer, OpGNUImplicitPointer:
		die := r.fixed(m.offsetSize())
		off := r.sleb()
		m.loc = Location{Kind: KindImplicitPointer, PointerDIE: die, PointerOffset: off}
		m.hasLoc = true
		return nil
	case OpAddrx, OpConstx, OpGNUAddrIndex, OpGNUConstIndex:
		idx := r.uleb()
		if r.bad {
			return nil
		}
		read := cfg.DebugAddr
		if (op == OpConstx || op == OpGNUConstIndex) && cfg.DebugConst != nil {
			read = cfg.DebugConst
		}
		if read == nil {
			return ErrNeedsContext
		}
		v, err := read(idx)
		if err != nil {
			return err
		}
		return m.push(v)
	case OpEntryValue, OpGNUEntryValue:
		n := r.uleb()
		sub := r.bytes(n)
		if r.bad {
			return nil
		}
		if cfg.EntryValue == nil {
			return ErrNeedsContext
		}
		v, err := cfg.EntryValue(sub)
		if err != nil {
			return err
		}
		return m.pushValue(v)
	case OpConstType, OpGNUConstType:
		t, err := m.baseType(r.uleb())
		n := int(r.u8())
		b := r.bytes(uint64(n))
		if r.bad || err != nil {
			return err
		}
		if n == 0 || n > 8 {
			return ErrUnsupported
		}
		var buf [8]byte
		copy(buf[:], b)
		return m.pushValue(Value{Bits: binary.LittleEndian.Uint64(buf[:]), Type: t})
	case OpRegvalType, OpGNURegvalType:
		reg := r.uleb()
		t, err := m.baseType(r.uleb())
		if r.bad || err != nil {
			return err
		}
		v, err := m.register(reg)
		if err != nil {
			return err
		}
		return m.pushValue(Value{Bits: maskTo(v, m.sizeOf(t)), Type: t})
	case OpConvert, OpGNUConvert, OpReinterpret, OpGNUReinterpret:
		t, err := m.baseType(r.uleb())
		if r.bad || err != nil {
			return err
		}
		v, err := m.pop()
		if err != nil {
			return err
		}
		if op == OpReinterpret || op == OpGNUReinterpret {
			if m.sizeOf(t) != m.sizeOf(v.Type) {
				return ErrType
			}
			return m.pushValue(Value{Bits: v.Bits, Type: t})
		}
		c, err := m.convert(v, t)
		if err != nil {
			return err
		}
		return m.pushValue(c)
	case OpGNUParameterRef:
		off := r.fixed(4)
		if r.bad {
			return nil
		}
		if cfg.ParameterRef == nil {
			return ErrNeedsContext
		}
		v, err := cfg.ParameterRef(off)
		if err != nil {
			return err
		}
		return m.push(v)
	case OpGNUVariableValue:
		off := r.fixed(m.offsetSize())
		if r.bad {
			return nil
		}
		if cfg.VariableValue == nil {
			return ErrNeedsContext
		}
		v, err := cfg.VariableValue(off)
		if err != nil {
			return err
		}
		return m.push(v)
	case OpGNUEncodedAddr:
		enc := r.u8()
		var v uint64
		switch enc & 0x0f {
		case 0x00:
			v = r.fixed(m.addr)
		case 0x02:
			v = r.fixed(2)
		case 0x03:
			v = r.fixed(4)
		case 0x04:
			v = r.fixed(8)
		case 0x0a:
			v = uint64(sext(r.fixed(2), 2))
		case 0x0b:
			v = uint64(sext(r.fixed(4), 4))
		case 0x0c:
			v = r.fixed(8)
		default:
			return ErrUnsupported
		}
		if enc&0x70 != 0 { // pc-, text-, data-relative: no base known here
			return ErrUnsupported
		}
		return m.push(v + cfg.addrBias())
	}
	return ErrBadOpcode
}

func (m *Machine) offsetSize() int {
	if m.cfg.OffsetSize == 8 {
		return 8
	}
	return 4
}
