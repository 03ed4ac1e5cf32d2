package dwarfexpr

import (
	"cmp"
	"math"
)

// Arithmetic on stack values. Values of the generic type are address-sized
// integers: unsigned for bit operations and addition, signed for division,
// comparison and arithmetic shift (as GDB does). Typed values follow their
// base type's encoding; floats of 4 and 8 bytes are supported.

func (m *Machine) isFloat(t BaseType) bool { return !t.IsGeneric() && t.Encoding == EncodingFloat }

func (m *Machine) isSigned(t BaseType) bool {
	if t.IsGeneric() {
		return true
	}
	return t.Encoding == EncodingSigned || t.Encoding == EncodingSignedChar
}

func (m *Machine) toFloat(v Value) float64 {
	if v.Type.Size == 4 {
		return float64(math.Float32frombits(uint32(v.Bits)))
	}
	return math.Float64frombits(v.Bits)
}

func (m *Machine) fromFloat(f float64, t BaseType) Value {
	if t.Size == 4 {
		return Value{Bits: uint64(math.Float32bits(float32(f))), Type: t}
	}
	return Value{Bits: math.Float64bits(f), Type: t}
}

func (m *Machine) floatOK(t BaseType) bool { return t.Size == 4 || t.Size == 8 }

func (m *Machine) unary(op byte) error {
	if m.sp == 0 {
		return ErrStackUnderflow
	}
	v := &m.stack[m.sp-1]
	size := m.sizeOf(v.Type)
	if m.isFloat(v.Type) {
		if !m.floatOK(v.Type) || op == OpNot {
			return ErrType
		}
		f := m.toFloat(*v)
		if op == OpNeg {
			f = -f
		} else {
			f = math.Abs(f)
		}
		*v = m.fromFloat(f, v.Type)
		return nil
	}
	switch op {
	case OpAbs:
		if m.isSigned(v.Type) {
			if s := sext(v.Bits, size); s < 0 {
				v.Bits = uint64(-s)
			}
		}
	case OpNeg:
		v.Bits = uint64(-int64(v.Bits))
	case OpNot:
		v.Bits = ^v.Bits
	}
	v.Bits = maskTo(v.Bits, size)
	return nil
}

func boolBits(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (m *Machine) binary(op byte) error {
	if m.sp < 2 {
		return ErrStackUnderflow
	}
	b := m.stack[m.sp-1]
	a := m.stack[m.sp-2]
	m.sp--
	res := &m.stack[m.sp-1]
	t := a.Type
	// Shifts take their count from any integral type; everything else needs
	// matching types.
	shift := op == OpShl || op == OpShr || op == OpShra
	if !shift && a.Type != b.Type {
		return ErrType
	}
	size := m.sizeOf(t)
	if m.isFloat(t) {
		if !m.floatOK(t) || shift || !m.isFloat(b.Type) {
			return ErrType
		}
		x, y := m.toFloat(a), m.toFloat(b)
		var f float64
		switch op {
		case OpPlus:
			f = x + y
		case OpMinus:
			f = x - y
		case OpMul:
			f = x * y
		case OpDiv:
			if y == 0 {
				return ErrDivideByZero
			}
			f = x / y
		case OpEq, OpGe, OpGt, OpLe, OpLt, OpNe:
			*res = Value{Bits: boolBits(compare(op, x, y))}
			return nil
		default:
			return ErrType
		}
		*res = m.fromFloat(f, t)
		return nil
	}
	if shift && m.isFloat(b.Type) {
		return ErrType
	}
	signed := m.isSigned(t)
	x, y := maskTo(a.Bits, size), maskTo(b.Bits, m.sizeOf(b.Type))
	sx, sy := sext(x, size), sext(y, size)
	var v uint64
	switch op {
	case OpAnd:
		v = x & y
	case OpOr:
		v = x | y
	case OpXor:
		v = x ^ y
	case OpPlus:
		v = x + y
	case OpMinus:
		v = x - y
	case OpMul:
		v = x * y
	case OpDiv:
		if y == 0 {
			return ErrDivideByZero
		}
		if signed {
			if sy == -1 {
				v = uint64(-sx) // avoids the MinInt64 / -1 trap
			} else {
				v = uint64(sx / sy)
			}
		} else {
			v = x / y
		}
	case OpMod:
		if y == 0 {
			return ErrDivideByZero
		}
		if signed && !t.IsGeneric() {
			if sy == -1 {
				v = 0
			} else {
				v = uint64(sx % sy)
			}
		} else {
			v = x % y
		}
	case OpShl:
		if y >= 64 {
			v = 0
		} else {
			v = x << y
		}
	case OpShr:
		if y >= 64 {
			v = 0
		} else {
			v = x >> y
		}
	case OpShra:
		if y >= 64 {
			y = 63
		}
		v = uint64(sx >> y)
	default:
		var r bool
		if signed {
			r = compare(op, sx, sy)
		} else {
			r = compare(op, x, y)
		}
		*res = Value{Bits: boolBits(r)}
		return nil
	}
	*res = Value{Bits: maskTo(v, size), Type: t}
	return nil
}

// compare applies a DWARF comparison operator (DW_OP_eq ... DW_OP_ne) to two
// values of one kind: signed, unsigned or floating point.
func compare[T cmp.Ordered](op byte, x, y T) bool {
	switch op {
	case OpEq:
		return x == y
	case OpGe:
		return x >= y
	case OpGt:
		return x > y
	case OpLe:
		return x <= y
	case OpLt:
		return x < y
	}
	return x != y
}

// convert implements DW_OP_convert: a value change between integer and
// floating-point types, or a width change between integers.
func (m *Machine) convert(v Value, t BaseType) (Value, error) {
	from, to := m.isFloat(v.Type), m.isFloat(t)
	size := m.sizeOf(t)
	switch {
	case from && to:
		if !m.floatOK(v.Type) || !m.floatOK(t) {
			return Value{}, ErrType
		}
		return m.fromFloat(m.toFloat(v), t), nil
	case from:
		if !m.floatOK(v.Type) {
			return Value{}, ErrType
		}
		f := m.toFloat(v)
		if math.IsNaN(f) {
			return Value{}, ErrType
		}
		if m.isSigned(t) {
			return Value{Bits: maskTo(uint64(int64(f)), size), Type: t}, nil
		}
		return Value{Bits: maskTo(uint64(f), size), Type: t}, nil
	case to:
		if !m.floatOK(t) {
			return Value{}, ErrType
		}
		if m.isSigned(v.Type) && !v.Type.IsGeneric() {
			return m.fromFloat(float64(sext(v.Bits, m.sizeOf(v.Type))), t), nil
		}
		return m.fromFloat(float64(maskTo(v.Bits, m.sizeOf(v.Type))), t), nil
	}
	bits := maskTo(v.Bits, m.sizeOf(v.Type))
	if m.isSigned(v.Type) && !v.Type.IsGeneric() {
		bits = uint64(sext(bits, m.sizeOf(v.Type)))
	}
	return Value{Bits: maskTo(bits, size), Type: t}, nil
}
