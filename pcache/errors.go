package pcache

import (
	"errors"
	"fmt"
)

// Reason says why a cache file was rejected or could not be written.
type Reason int

const (
	// ReasonIO: the file or directory could not be read or written.
	ReasonIO Reason = iota + 1
	// ReasonOwner: the file or directory belongs to another user, or others
	// may write it.
	ReasonOwner
	// ReasonTruncated: the file is shorter than its header says, or its
	// footer is missing.
	ReasonTruncated
	// ReasonNotCache: the file does not start with the pcache magic.
	ReasonNotCache
	// ReasonVersion: the file was written in another format version.
	ReasonVersion
	// ReasonArch: the file was written for another architecture.
	ReasonArch
	// ReasonChecksum: the header, the section table or a section does not
	// match its checksum.
	ReasonChecksum
	// ReasonCorrupt: the checksums match but the layout is impossible
	// (sections overlapping or outside the file, non-zero padding).
	ReasonCorrupt
	// ReasonModule: the file was derived from another version of the source
	// file (build-id, size or modification time differ).
	ReasonModule
	// ReasonClientVersion: a client's sections were written by another
	// version of that client.
	ReasonClientVersion
	// ReasonClient: a client's callback failed (its resurrect rejected the
	// data, or its persist wrote the wrong size).
	ReasonClient
	// ReasonMissing: there is no cache file for the key.
	ReasonMissing
)

var reasonNames = map[Reason]string{
	ReasonIO: "I/O error", ReasonOwner: "wrong owner or permissions", ReasonTruncated: "truncated",
	ReasonNotCache: "not a cache file", ReasonVersion: "format version mismatch",
	ReasonArch: "architecture mismatch", ReasonChecksum: "checksum mismatch", ReasonCorrupt: "corrupt",
	ReasonModule: "source file mismatch", ReasonClientVersion: "client version mismatch",
	ReasonClient: "client failed", ReasonMissing: "no cache file",
}

func (r Reason) String() string {
	if s, ok := reasonNames[r]; ok {
		return s
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Error is a rejected or unwritable cache file: which file, why (Reason),
// and details (Err, often naming an offset or a section).
type Error struct {
	Path   string
	Reason Reason
	Err    error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("pcache: %s: %v", e.Path, e.Reason)
	}
	return fmt.Sprintf("pcache: %s: %v: %v", e.Path, e.Reason, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Is lets errors.Is(err, ErrMissing) and friends match on the reason.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Path == "" && t.Err == nil && t.Reason == e.Reason
}

// ErrMissing matches (with errors.Is) the error of a Load that found no file.
var ErrMissing = &Error{Reason: ReasonMissing}

// ReasonOf returns the Reason of a pcache error (0 when err is not one).
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return 0
}

func fail(path string, r Reason, format string, args ...any) *Error {
	return &Error{Path: path, Reason: r, Err: fmt.Errorf(format, args...)}
}
