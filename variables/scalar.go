package variables

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Scalar decoding of loaded values.

// Int returns an integer, enum, char, bool or pointer value, sign-extended
// when its type is signed.
func (v *Value) Int() (int64, error) {
	u, err := v.Uint()
	if err != nil {
		return 0, err
	}
	n := len(v.Bytes)
	if v.BitSize > 0 {
		if v.Type.IsSigned() && v.BitSize < 64 {
			shift := 64 - uint(v.BitSize)
			return int64(u<<shift) >> shift, nil
		}
		return int64(u), nil
	}
	if v.Type.IsSigned() && n < 8 && n > 0 {
		shift := 64 - 8*uint(n)
		return int64(u<<shift) >> shift, nil
	}
	return int64(u), nil
}

// Uint returns the value's bits as an unsigned integer (zero-extended). A bit
// field is extracted from its storage.
func (v *Value) Uint() (uint64, error) {
	if v.Bytes == nil {
		return 0, ErrOptimizedOut
	}
	if v.BitSize > 0 {
		var u uint64
		for i := int64(0); i < v.BitSize && i < 64; i++ {
			bit := v.BitOffset + i
			if bit/8 < int64(len(v.Bytes)) && v.Bytes[bit/8]>>(bit%8)&1 != 0 {
				u |= 1 << uint(i)
			}
		}
		return u, nil
	}
	if len(v.Bytes) > 8 {
		return 0, fmt.Errorf("variables: a %d-byte %s is not a scalar", len(v.Bytes), v.Type)
	}
	var w [8]byte
	copy(w[:], v.Bytes)
	return binary.LittleEndian.Uint64(w[:]), nil
}

// Float returns a float, double (or long double, approximately) value.
func (v *Value) Float() (float64, error) {
	switch len(v.Bytes) {
	case 4:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(v.Bytes))), nil
	case 8:
		return math.Float64frombits(binary.LittleEndian.Uint64(v.Bytes)), nil
	case 10, 12, 16:
		return x87ToFloat64(v.Bytes[:10]), nil
	case 0:
		if v.Bytes == nil {
			return 0, ErrOptimizedOut
		}
	}
	return 0, fmt.Errorf("variables: a %d-byte %s is not a floating value", len(v.Bytes), v.Type)
}

// x87ToFloat64 converts an 80-bit x87 extended value (long double).
func x87ToFloat64(b []byte) float64 {
	mant := binary.LittleEndian.Uint64(b[:8])
	se := binary.LittleEndian.Uint16(b[8:10])
	sign := 1.0
	if se&0x8000 != 0 {
		sign = -1
	}
	exp := int(se & 0x7fff)
	switch {
	case exp == 0 && mant == 0:
		return sign * 0
	case exp == 0x7fff:
		if mant<<1 == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(float64(mant), exp-16383-63)
}

// Float64ToX87 encodes f as an 80-bit x87 extended value (for assignment to
// long double).
func Float64ToX87(f float64) []byte {
	out := make([]byte, 10)
	if f == 0 {
		if math.Signbit(f) {
			out[9] = 0x80
		}
		return out
	}
	var se uint16
	if f < 0 {
		se = 0x8000
		f = -f
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		se |= 0x7fff
		mant := uint64(1) << 63
		if math.IsNaN(f) {
			mant |= 1 << 62
		}
		binary.LittleEndian.PutUint64(out, mant)
		binary.LittleEndian.PutUint16(out[8:], se)
		return out
	}
	fr, exp := math.Frexp(f) // f = fr * 2^exp, fr in [0.5, 1)
	mant := uint64(fr * (1 << 63) * 2)
	se |= uint16(exp - 1 + 16383)
	binary.LittleEndian.PutUint64(out, mant)
	binary.LittleEndian.PutUint16(out[8:], se)
	return out
}
