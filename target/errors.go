package target

import (
	"errors"
	"fmt"
	"syscall"
)

// Code classifies an error. The values are TCF's standard error codes, so the
// protocol edge maps them one to one; the model itself never imports the protocol.
type Code int

const (
	CodeOther           Code = 1
	CodeAlreadyStopped  Code = 10
	CodeAlreadyExited   Code = 11
	CodeAlreadyRunning  Code = 12
	CodeAlreadyAttached Code = 13
	CodeIsRunning       Code = 14
	CodeInvalidDataSize Code = 15
	CodeInvalidContext  Code = 16
	CodeInvalidAddress  Code = 17
	CodeUnsupported     Code = 23
	CodeInvalidCommand  Code = 25
)

var codeNames = map[Code]string{
	CodeOther:           "error",
	CodeAlreadyStopped:  "already stopped",
	CodeAlreadyExited:   "already exited",
	CodeAlreadyRunning:  "already running",
	CodeAlreadyAttached: "already attached",
	CodeIsRunning:       "context is running",
	CodeInvalidDataSize: "invalid data size",
	CodeInvalidContext:  "invalid context",
	CodeInvalidAddress:  "invalid address",
	CodeUnsupported:     "unsupported",
	CodeInvalidCommand:  "invalid command",
}

func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("error %d", int(c))
}

// Error is the error type of every target operation.
type Error struct {
	Code    Code
	Op      string // the operation, e.g. "resume", "read memory"
	Context ID     // the context it concerned, if any
	Errno   syscall.Errno
	Err     error // the cause, if any
}

func (e *Error) Error() string {
	msg := e.Code.String()
	if e.Op != "" {
		msg = e.Op + ": " + msg
	}
	if e.Context != "" {
		msg = string(e.Context) + ": " + msg
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	} else if e.Errno != 0 {
		msg += ": " + e.Errno.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// TCFCode returns the TCF error code; the protocol layer finds it through a
// small interface without importing this package.
func (e *Error) TCFCode() int { return int(e.Code) }

// OSErrno returns the OS error number behind the error, or 0.
func (e *Error) OSErrno() int { return int(e.Errno) }

// Is makes errors.Is(err, ErrAlreadyExited) and friends work by code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Op == "" && t.Context == "" && t.Err == nil && t.Errno == 0 && t.Code == e.Code
}

// Sentinels for errors.Is. Operations return *Error values carrying more detail.
var (
	ErrAlreadyStopped  = &Error{Code: CodeAlreadyStopped}
	ErrAlreadyExited   = &Error{Code: CodeAlreadyExited}
	ErrAlreadyRunning  = &Error{Code: CodeAlreadyRunning}
	ErrAlreadyAttached = &Error{Code: CodeAlreadyAttached}
	ErrIsRunning       = &Error{Code: CodeIsRunning}
	ErrInvalidContext  = &Error{Code: CodeInvalidContext}
	ErrInvalidAddress  = &Error{Code: CodeInvalidAddress}
	ErrUnsupported     = &Error{Code: CodeUnsupported}
)

// Errorf builds an *Error. cause may be nil; a syscall.Errno cause (possibly
// wrapped) is recorded as Errno too.
func Errorf(code Code, op string, ctx ID, cause error) *Error {
	e := &Error{Code: code, Op: op, Context: ctx, Err: cause}
	var errno syscall.Errno
	if errors.As(cause, &errno) {
		e.Errno = errno
	}
	return e
}

// CodeOf returns the Code of err, CodeOther for foreign errors and 0 for nil.
func CodeOf(err error) Code {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeOther
}

// MemoryError reports a memory access that failed part way: the first Valid
// bytes were transferred, the byte at Addr was not.
type MemoryError struct {
	Addr  uint64
	Valid int
	Err   error
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("cannot access memory at 0x%x (%d bytes transferred before it): %v", e.Addr, e.Valid, e.Err)
}
func (e *MemoryError) Unwrap() error   { return e.Err }
func (e *MemoryError) TCFCode() int    { return int(CodeInvalidAddress) }
func (e *MemoryError) Is(t error) bool { return t == ErrInvalidAddress }
