// Package cfi reads DWARF call-frame information — the .eh_frame section
// (indexed by .eh_frame_hdr when present) and the .debug_frame section — and
// computes the unwind row for a pc: how to find the canonical frame address
// (CFA) and where the caller's registers were saved.
//
// Addresses are the module's own (link-time) addresses: the caller subtracts
// the load bias before asking, so one Table serves every process that maps the
// file. Tables are immutable after construction and safe for concurrent use.
//
// Input is untrusted: every length and offset is checked, lookups never scan
// a whole section (the .eh_frame_hdr table is binary-searched; without it, one
// sorted index is built on first use), and errors name the section and offset.
package cfi

import (
	"errors"
	"fmt"
)

// Section says which kind of CFI section a Table reads; the two differ in CIE
// ids, CIE pointers and pointer encodings.
type Section uint8

const (
	EHFrame    Section = iota // .eh_frame (GCC/LSB format)
	DebugFrame                // .debug_frame (DWARF format)
)

func (s Section) String() string {
	if s == EHFrame {
		return ".eh_frame"
	}
	return ".debug_frame"
}

// NumRegs is the number of register columns a Row tracks (DWARF numbers
// 0..NumRegs-1). It covers x86-64's general registers, rip and xmm0-15, and
// arm64's x0-x30, sp and pc. Rules for higher columns are ignored: no ABI saves
// such registers in CFI.
const NumRegs = 33

// RuleKind is how a register (or the CFA) is recovered.
type RuleKind uint8

const (
	// RuleUnspecified: the CFI says nothing about the register; the ABI decides
	// (callee-saved registers keep their value, others are unknown).
	RuleUnspecified   RuleKind = iota
	RuleUndefined              // the value is not recoverable (for the return address: outermost frame)
	RuleSameValue              // the caller's value is the current value
	RuleOffset                 // saved in memory at CFA+Offset
	RuleValOffset              // the value is CFA+Offset
	RuleRegister               // the value is in register Reg
	RuleExpression             // saved in memory at the address Expr computes (CFA pushed first)
	RuleValExpression          // the value is what Expr computes (CFA pushed first)
	RuleCFARegOffset           // CFA only: register Reg plus Offset
	RuleCFAExpression          // CFA only: the value Expr computes (nothing pushed)
)

func (k RuleKind) String() string {
	switch k {
	case RuleUnspecified:
		return "unspecified"
	case RuleUndefined:
		return "undefined"
	case RuleSameValue:
		return "same"
	case RuleOffset:
		return "offset"
	case RuleValOffset:
		return "val_offset"
	case RuleRegister:
		return "register"
	case RuleExpression:
		return "expression"
	case RuleValExpression:
		return "val_expression"
	case RuleCFARegOffset:
		return "cfa_reg_offset"
	case RuleCFAExpression:
		return "cfa_expression"
	}
	return fmt.Sprintf("RuleKind(%d)", k)
}

// Rule is one recovery rule. Expr aliases the section data.
type Rule struct {
	Kind   RuleKind
	Reg    uint16
	Offset int64
	Expr   []byte
}

func (r Rule) String() string {
	switch r.Kind {
	case RuleOffset, RuleValOffset:
		return fmt.Sprintf("%s(%d)", r.Kind, r.Offset)
	case RuleRegister:
		return fmt.Sprintf("r%d", r.Reg)
	case RuleCFARegOffset:
		return fmt.Sprintf("r%d%+d", r.Reg, r.Offset)
	case RuleExpression, RuleValExpression, RuleCFAExpression:
		return fmt.Sprintf("%s[% x]", r.Kind, r.Expr)
	}
	return r.Kind.String()
}

// Row is the unwind row for a range of pcs: the result of running a CIE's and
// an FDE's instructions up to a pc.
type Row struct {
	Start, End  uint64 // the pcs [Start, End) share this row
	CFA         Rule
	Regs        [NumRegs]Rule
	RAReg       uint16 // the return-address column
	SignalFrame bool   // the CIE has the 'S' augmentation: a signal trampoline
	ArgsSize    uint64 // DW_CFA_GNU_args_size
	FDEOffset   uint64 // section offset of the FDE, for diagnostics
	Section     Section
}

// Errors wrapped by *Error.
var (
	ErrNoFDE           = errors.New("no FDE covers the pc")
	ErrTruncated       = errors.New("truncated")
	ErrBadLength       = errors.New("entry length out of range")
	ErrBadCIE          = errors.New("bad CIE")
	ErrBadVersion      = errors.New("unsupported CIE version")
	ErrBadAugmentation = errors.New("unsupported augmentation")
	ErrBadEncoding     = errors.New("unsupported pointer encoding")
	ErrBadOpcode       = errors.New("unknown call-frame instruction")
	ErrStateStack      = errors.New("remember/restore_state stack out of balance")
	ErrBadRule         = errors.New("instruction not valid in this state")
	ErrBadHeader       = errors.New("bad .eh_frame_hdr")
)

// Error says what went wrong where: the section, the byte offset in it, and a
// sentinel cause (errors.Is works against the Err* values).
type Error struct {
	Section string // ".eh_frame", ".eh_frame_hdr" or ".debug_frame"
	Offset  uint64
	Err     error
	Detail  string
}

func (e *Error) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("cfi: %s+%#x: %v: %s", e.Section, e.Offset, e.Err, e.Detail)
	}
	return fmt.Sprintf("cfi: %s+%#x: %v", e.Section, e.Offset, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }
