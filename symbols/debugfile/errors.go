package debugfile

import (
	"errors"
	"fmt"
)

// Error reports a failure about one file: what was being done (Op) and why.
type Error struct {
	Path string // the file concerned
	Op   string // e.g. "read build-id", "check CRC", "decode .gnu_debugdata"
	Err  error  // the cause
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("debugfile: %s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("debugfile: %s: %s: %v", e.Path, e.Op, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// FormatError describes malformed data inside a section or stream: what is
// wrong and at which byte offset (relative to the start of that data).
type FormatError struct {
	What   string // the structure being parsed, e.g. ".gnu_debuglink"
	Offset int64
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: %s at offset %#x", e.What, e.Msg, e.Offset)
}

var (
	// ErrCRCMismatch: a .gnu_debuglink candidate exists but its CRC differs
	// from the one recorded in the binary (a debug file of another build).
	ErrCRCMismatch = errors.New("CRC mismatch")
	// ErrBuildIDMismatch: a candidate's build-id differs from the binary's.
	ErrBuildIDMismatch = errors.New("build-id mismatch")
	// ErrTooLarge: decompressed data would exceed the configured limit.
	ErrTooLarge = errors.New("data exceeds size limit")
	// ErrSameFile: a .gnu_debuglink candidate is the binary itself (a
	// stripped binary whose debuglink names its own file).
	ErrSameFile = errors.New("candidate is the binary itself")
)
