package expr

import (
	"encoding/binary"
	"math"

	"github.com/sondedbg/sonde/variables"
)

// place says where an operand lives.
type place uint8

const (
	inNowhere  place = iota // an rvalue: bytes only
	inMemory                // an lvalue in target memory at addr
	inRegister              // an lvalue in DWARF register reg
)

// value is an operand during evaluation. Memory lvalues are loaded lazily,
// so indexing a huge array or taking an address reads nothing.
type value struct {
	t       *variables.Type
	where   place
	addr    uint64
	reg     int
	bytes   []byte // loaded bytes (nil until loaded for memory lvalues)
	unavail []bool // bytes the compiler did not keep (pieces), nil: all known
	// implicit is set for a pointer that has no value but whose target is
	// known (DW_OP_implicit_pointer): dereferencing reads the target.
	implicit *implicitTarget
	bitOff   int64 // bit fields: bits from the start of the storage
	bitSize  int64
	sym      *variables.Variable
	// ref is the C++ reference type v was reached through (a variable or
	// member of type int &): v is its referent, and the expression, when
	// it is just that, prints as gdb's print shows a reference.
	ref *variables.Type
}

func (v *value) isBitField() bool { return v.bitSize > 0 }

// known reports an error when any byte of v the compiler did not keep.
func (v *value) known(pos int) error {
	for _, u := range v.unavail {
		if u {
			return errorf(ErrOptimizedOut, pos, "value (or part of it) is optimized out")
		}
	}
	return nil
}

// load reads a memory lvalue's bytes (the storage, for a bit field).
func (e *evaluator) load(v *value, pos int) error {
	if v.bytes != nil {
		return v.known(pos)
	}
	if v.implicit != nil {
		return errorf(ErrOptimizedOut, pos, "synthetic pointer: what it points to has no address (dereference it)")
	}
	if v.where != inMemory {
		return errorf(ErrOptimizedOut, pos, "value is not available")
	}
	size := v.t.ByteSize()
	if v.isBitField() {
		size = (v.bitOff + v.bitSize + 7) / 8
	}
	if size < 0 {
		return errorf(ErrType, pos, "size of %s is unknown", v.t)
	}
	if size > variables.MaxValueSize {
		return errorf(ErrType, pos, "%s is %d bytes, more than %d", v.t, size, variables.MaxValueSize)
	}
	if e.env.Frame == nil {
		return errorf(ErrMemory, pos, "no target to read %#x from", v.addr)
	}
	buf := make([]byte, size)
	n, err := e.env.Frame.ReadMemory(buf, v.addr)
	if n < len(buf) {
		return &Error{Kind: ErrMemory, Pos: pos, Msg: "cannot access memory at address 0x" + hex(v.addr+uint64(n)),
			Err: &variables.MemoryError{Addr: v.addr + uint64(n), Size: len(buf) - n, Err: err}}
	}
	v.bytes = buf
	return nil
}

func hex(v uint64) string {
	const digits = "0123456789abcdef"
	if v == 0 {
		return "0"
	}
	var b [16]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b[i:])
}

// bits returns an integer or pointer operand's value, zero-extended, and
// whether it is signed.
func (e *evaluator) bits(v *value, pos int) (uint64, error) {
	if err := e.load(v, pos); err != nil {
		return 0, err
	}
	vv := variables.Value{Type: v.t, Bytes: v.bytes, BitOffset: v.bitOff, BitSize: v.bitSize}
	if v.t.IsSigned() {
		n, err := vv.Int()
		return uint64(n), err
	}
	u, err := vv.Uint()
	if err != nil {
		return 0, errorf(ErrType, pos, "%v", err)
	}
	if !v.isBitField() && v.t.ByteSize() < 8 && v.t.ByteSize() > 0 {
		u &= 1<<(8*uint(v.t.ByteSize())) - 1
	}
	return u, nil
}

// float returns a floating operand's value.
func (e *evaluator) float(v *value, pos int) (float64, error) {
	if err := e.load(v, pos); err != nil {
		return 0, err
	}
	vv := variables.Value{Type: v.t, Bytes: v.bytes}
	f, err := vv.Float()
	if err != nil {
		return 0, errorf(ErrType, pos, "%v", err)
	}
	return f, nil
}

// intValue makes an rvalue of integer type t.
func intValue(t *variables.Type, n uint64) *value {
	size := t.ByteSize()
	if size <= 0 || size > 8 {
		size = 8
	}
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, n)
	return &value{t: t, bytes: b[:size]}
}

// floatValue makes an rvalue of floating type t.
func floatValue(t *variables.Type, f float64) *value {
	switch t.ByteSize() {
	case 4:
		b := make([]byte, 4)
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(f)))
		return &value{t: t, bytes: b}
	case 8:
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, math.Float64bits(f))
		return &value{t: t, bytes: b}
	}
	b := make([]byte, max(t.ByteSize(), 10))
	copy(b, variables.Float64ToX87(f))
	return &value{t: t, bytes: b}
}

// implicitTarget is what an implicit pointer points to.
type implicitTarget struct {
	die    uint64
	offset int64
	reader *variables.Reader
	frame  variables.Frame
	scope  *variables.Scope
}
