// Package dwarfexpr evaluates DWARF expressions: the stack machine that DWARF
// uses for call-frame rules (CFA and register rules in .eh_frame/.debug_frame)
// and for variable locations in .debug_info.
//
// It implements every DWARF 5 operator and the GNU extensions GCC emits
// (entry values, typed stack operations, implicit pointers, TLS, parameter
// references). It knows no target: memory and registers are read through the
// Target interface, and everything that needs the debug information of a
// compilation unit (base types, .debug_addr, DIE references, entry values,
// thread-local storage) goes through optional callbacks in Config, so the
// unwinder and the symbol layer share one evaluator.
//
// Hostile input is normal input: every operand is bounds-checked, evaluation
// is bounded in steps and stack depth, and errors say which operator at which
// offset failed.
package dwarfexpr

import (
	"errors"
	"fmt"
)

// Target is the program an expression is evaluated against.
type Target interface {
	// ReadMemory fills buf from addr and returns how many bytes it read; a short
	// read means the rest is unreadable.
	ReadMemory(buf []byte, addr uint64) (int, error)
	// Register returns the value of DWARF register reg; an error (typically
	// wrapping ErrUnknownRegister) when its value is not known.
	Register(reg uint64) (uint64, error)
}

// BaseType is a DWARF base type as typed stack operations see it. The zero
// BaseType is the generic type: an unsigned integer of the address size.
type BaseType struct {
	Offset   uint64 // DIE offset that named it (0 for the generic type)
	Size     uint8  // bytes; 1..8 are supported
	Encoding uint8  // DW_ATE_* (EncodingSigned, EncodingFloat, ...)
}

// IsGeneric reports whether t is the generic type.
func (t BaseType) IsGeneric() bool { return t.Offset == 0 && t.Size == 0 }

// Value is one stack entry: the bits, and the type that says how to read them.
type Value struct {
	Bits uint64
	Type BaseType
}

// Config carries the evaluation parameters and the callbacks for operators
// that need more than memory and registers. A nil callback makes its
// operators fail with ErrNeedsContext. The zero Config is valid for CFI.
type Config struct {
	AddrSize   int // 8 (default) or 4
	OffsetSize int // 4 (32-bit DWARF, default) or 8: DIE references in call_ref and implicit_pointer
	MaxSteps   int // operators executed before giving up (default 100000)
	MaxDepth   int // stack entries (default and maximum: StackLimit)
	MaxCalls   int // nesting of call2/call4/call_ref (default 16)
	// AddrBias is added to DW_OP_addr operands: the load bias of the module the
	// expression came from (DW_OP_addrx goes through DebugAddr, which applies it itself).
	AddrBias uint64

	FrameBase     func() (uint64, error)                           // DW_OP_fbreg
	CFA           func() (uint64, error)                           // DW_OP_call_frame_cfa
	ObjectAddress func() (uint64, error)                           // DW_OP_push_object_address
	TLSAddress    func(offset uint64) (uint64, error)              // DW_OP_form_tls_address, DW_OP_GNU_push_tls_address
	DebugAddr     func(index uint64) (uint64, error)               // DW_OP_addrx, DW_OP_GNU_addr_index (constx too when DebugConst is nil)
	Call          func(dieOffset uint64, ref bool) ([]byte, error) // DW_OP_call2/4 (ref=false, CU-relative) and call_ref
	BaseType      func(dieOffset uint64) (BaseType, error)         // typed operators
	EntryValue    func(expr []byte) (Value, error)                 // DW_OP_entry_value: value expr had on entry to the function
	ParameterRef  func(dieOffset uint64) (uint64, error)           // DW_OP_GNU_parameter_ref
	VariableValue func(dieOffset uint64) (uint64, error)           // DW_OP_GNU_variable_value

	// DebugConst reads a .debug_addr entry for DW_OP_constx and
	// DW_OP_GNU_const_index: a constant that is not an address of the
	// module (a thread-local variable's offset), so unlike DebugAddr it must
	// not add the load bias. When nil, DebugAddr serves these operators too.
	DebugConst func(index uint64) (uint64, error)
}

func (c *Config) addrBias() uint64 { return c.AddrBias }

// StackLimit is the largest stack an evaluation may build.
const StackLimit = 64

// Kind says what kind of location (or value) an expression described.
type Kind uint8

const (
	// KindEmpty: the expression was empty or a piece had no location (optimized out).
	KindEmpty Kind = iota
	// KindMemory: the object lives in memory at Address.
	KindMemory
	// KindRegister: the object lives in DWARF register Register.
	KindRegister
	// KindValue: the expression computed the value itself (DW_OP_stack_value).
	KindValue
	// KindImplicit: the value's bytes are in Bytes (DW_OP_implicit_value).
	KindImplicit
	// KindImplicitPointer: a pointer to the object described by DIE PointerDIE,
	// plus PointerOffset bytes (DW_OP_implicit_pointer).
	KindImplicitPointer
)

func (k Kind) String() string {
	switch k {
	case KindEmpty:
		return "empty"
	case KindMemory:
		return "memory"
	case KindRegister:
		return "register"
	case KindValue:
		return "value"
	case KindImplicit:
		return "implicit"
	case KindImplicitPointer:
		return "implicit-pointer"
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Location is where an object (or one piece of it) is.
type Location struct {
	Kind          Kind
	Address       uint64 // KindMemory
	Register      uint64 // KindRegister
	Value         Value  // KindValue
	Bytes         []byte // KindImplicit; aliases the expression
	PointerDIE    uint64 // KindImplicitPointer
	PointerOffset int64  // KindImplicitPointer
}

// Piece is one part of a composite location (DW_OP_piece, DW_OP_bit_piece).
type Piece struct {
	Location
	SizeBits   uint64
	OffsetBits uint64 // DW_OP_bit_piece's offset within the location
}

// Result is the outcome of an evaluation: one location, or several pieces.
// Pieces aliases the Machine's buffer and stays valid until its next Eval.
type Result struct {
	Location
	Pieces []Piece
}

// Errors wrapped by *Error.
var (
	ErrStackUnderflow  = errors.New("stack underflow")
	ErrStackOverflow   = errors.New("stack overflow")
	ErrStepLimit       = errors.New("step limit reached (expression loops?)")
	ErrTruncated       = errors.New("operand runs past the end of the expression")
	ErrBadOpcode       = errors.New("unknown operator")
	ErrBadBranch       = errors.New("branch target outside the expression")
	ErrDivideByZero    = errors.New("division by zero")
	ErrNeedsContext    = errors.New("operator needs context the caller did not provide")
	ErrMemory          = errors.New("memory unreadable")
	ErrUnknownRegister = errors.New("register value unknown")
	ErrType            = errors.New("type mismatch")
	ErrUnsupported     = errors.New("unsupported operand")
	ErrBadComposition  = errors.New("operator not allowed here")
)

// Error reports a failed evaluation: which operator, at which offset of the
// expression, and why (Err wraps one of the Err* sentinels or a callback's
// error).
type Error struct {
	Offset int  // byte offset of the operator in the expression
	Op     byte // the operator
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("dwarfexpr: %s at offset %d: %v", OpName(e.Op), e.Offset, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// MemoryError is the cause when a read of target memory fails.
type MemoryError struct {
	Addr uint64
	Size int
	Err  error // the target's error, if it gave one
}

func (e *MemoryError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("memory unreadable at %#x (%d bytes): %v", e.Addr, e.Size, e.Err)
	}
	return fmt.Sprintf("memory unreadable at %#x (%d bytes)", e.Addr, e.Size)
}

func (e *MemoryError) Is(target error) bool { return target == ErrMemory }

func (e *MemoryError) Unwrap() error { return e.Err }

// Eval evaluates expr once with a fresh Machine. Values in push are pushed,
// in order, before the first operator (CFI register rules push the CFA).
func Eval(expr []byte, target Target, cfg *Config, push ...uint64) (Result, error) {
	var m Machine
	return m.Eval(expr, target, cfg, push...)
}
