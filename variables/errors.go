package variables

import (
	"errors"
	"fmt"
)

// Errors wrapped by the errors this package returns; test with errors.Is.
var (
	// ErrOptimizedOut: the variable has no location at this pc (or a piece of
	// it has none), so its value is not available.
	ErrOptimizedOut = errors.New("optimized out")
	// ErrBadDWARF: the debug information is malformed.
	ErrBadDWARF = errors.New("malformed DWARF")
	// ErrNoDWARF: the binary has no DWARF debug information.
	ErrNoDWARF = errors.New("no DWARF debug information")
	// ErrNotFound: no variable, type or scope matched.
	ErrNotFound = errors.New("not found")
	// ErrMemory: target memory the value lives in could not be read.
	ErrMemory = errors.New("memory unreadable")
	// ErrRegister: a register the value lives in is not known in this frame.
	ErrRegister = errors.New("register unavailable")
	// ErrTooLarge: a value or type is larger than a reader will handle.
	ErrTooLarge = errors.New("too large")
)

// Error reports a failure about one DIE (Offset 0 when none applies).
type Error struct {
	Op     string // what was being done: "decode type", "evaluate location"...
	Offset uint64 // DIE offset in .debug_info
	Err    error
}

func (e *Error) Error() string {
	if e.Offset != 0 {
		return fmt.Sprintf("variables: %s (DIE %#x): %v", e.Op, e.Offset, e.Err)
	}
	return fmt.Sprintf("variables: %s: %v", e.Op, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

func bad(op string, off uint64, format string, args ...any) error {
	return &Error{Op: op, Offset: off, Err: fmt.Errorf("%w: "+format, append([]any{ErrBadDWARF}, args...)...)}
}
