package expr

import (
	"errors"
	"fmt"

	"github.com/sondedbg/sonde/variables"
)

// ErrorKind classifies expression errors.
type ErrorKind uint8

const (
	ErrSyntax        ErrorKind = iota + 1 // the text is not an expression
	ErrNotFound                           // an unknown name or member
	ErrType                               // an operation the operand types do not allow
	ErrMemory                             // target memory could not be read or written
	ErrDivideByZero                       // integer division or remainder by zero
	ErrOptimizedOut                       // a value the compiler did not keep
	ErrUnsupported                        // valid C the evaluator does not do (calls, ++)
	ErrNotAssignable                      // assignment to something that is not an lvalue
	ErrOther
)

var kindNames = map[ErrorKind]string{ErrSyntax: "syntax error", ErrNotFound: "not found", ErrType: "type error",
	ErrMemory: "cannot access memory", ErrDivideByZero: "division by zero", ErrOptimizedOut: "optimized out",
	ErrUnsupported: "unsupported", ErrNotAssignable: "not assignable", ErrOther: "error"}

// TCF error codes the kinds map to.
const (
	codeOther         = 1
	codeInvAddress    = 17
	codeInvExpression = 18
	codeSymNotFound   = 22
	codeUnsupported   = 23
	codeInvDataType   = 24
)

// Error is a failed parse or evaluation: what kind, at which byte of the
// source, and why.
type Error struct {
	Kind ErrorKind
	Pos  int // byte offset in the expression text
	Msg  string
	Err  error // the cause, when it came from below (memory, DWARF)
}

func (e *Error) Error() string {
	s := fmt.Sprintf("expr: %s at %d: %s", kindNames[e.Kind], e.Pos, e.Msg)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// TCFCode maps the kind to a TCF standard error code.
func (e *Error) TCFCode() int {
	switch e.Kind {
	case ErrSyntax, ErrDivideByZero, ErrNotAssignable:
		return codeInvExpression
	case ErrNotFound:
		return codeSymNotFound
	case ErrType:
		return codeInvDataType
	case ErrMemory:
		return codeInvAddress
	case ErrUnsupported:
		return codeUnsupported
	}
	return codeOther
}

func errorf(kind ErrorKind, pos int, format string, args ...any) *Error {
	return &Error{Kind: kind, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// wrap classifies an error from the variables layer.
func wrap(pos int, what string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	kind := ErrOther
	switch {
	case errors.Is(err, variables.ErrOptimizedOut):
		kind = ErrOptimizedOut
	case errors.Is(err, variables.ErrMemory):
		kind = ErrMemory
	case errors.Is(err, variables.ErrTooLarge):
		kind = ErrType
	}
	return &Error{Kind: kind, Pos: pos, Msg: what, Err: err}
}
