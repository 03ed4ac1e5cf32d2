package memimage

import (
	"errors"
	"fmt"
	"time"
)

// ErrNoMap reports that nothing in the image (no section, no overlay, no
// fallback) holds the requested address. Test for it with errors.Is; the
// concrete error is usually an *UnmappedError that says where.
var ErrNoMap = errors.New("memimage: address not mapped")

// UnmappedError says which address of which address space nothing covers.
type UnmappedError struct {
	ASID ASID
	Addr uint64
}

func (e *UnmappedError) Error() string {
	return fmt.Sprintf("memimage: no section or fallback covers %#x in %v", e.Addr, e.ASID)
}

// Is makes errors.Is(err, ErrNoMap) true.
func (e *UnmappedError) Is(target error) bool { return target == ErrNoMap }

// StaleFileError reports that a file section's file changed after the section
// was made, so its bytes can no longer be trusted to be the ones the target saw.
type StaleFileError struct {
	Path   string
	Reason string // "size", "mtime", "identity" (device/inode), "truncated while mapped" or "missing"
	// Recorded and Now describe the file when the section was made and when the
	// change was noticed (zero when unknown, e.g. after a truncation fault).
	RecordedSize, NowSize   int64
	RecordedMtime, NowMtime time.Time
	Err                     error // the stat/open error for Reason "missing"
}

func (e *StaleFileError) Error() string {
	switch e.Reason {
	case "size":
		return fmt.Sprintf("memimage: stale file %s: size changed from %d to %d", e.Path, e.RecordedSize, e.NowSize)
	case "mtime":
		return fmt.Sprintf("memimage: stale file %s: mtime changed from %s to %s", e.Path,
			e.RecordedMtime.Format(time.RFC3339Nano), e.NowMtime.Format(time.RFC3339Nano))
	case "identity":
		return fmt.Sprintf("memimage: stale file %s: replaced by another file (device/inode changed)", e.Path)
	case "missing":
		return fmt.Sprintf("memimage: stale file %s: %v", e.Path, e.Err)
	default:
		return fmt.Sprintf("memimage: stale file %s: %s", e.Path, e.Reason)
	}
}

func (e *StaleFileError) Unwrap() error { return e.Err }

// SectionError reports a section that cannot be made: its file cannot be
// examined, or the requested range is empty or lies outside the file.
type SectionError struct {
	Name         string
	Offset, Size uint64
	Err          error
}

func (e *SectionError) Error() string {
	return fmt.Sprintf("memimage: section %s [offset %#x, size %#x]: %v", e.Name, e.Offset, e.Size, e.Err)
}

func (e *SectionError) Unwrap() error { return e.Err }

// RangeError reports an address range that is empty or runs past the end of
// the 64-bit address space.
type RangeError struct {
	Addr, Size uint64
}

func (e *RangeError) Error() string {
	if e.Size == 0 {
		return fmt.Sprintf("memimage: empty range at %#x", e.Addr)
	}
	return fmt.Sprintf("memimage: range at %#x of size %#x wraps past the end of the address space", e.Addr, e.Size)
}

// UnknownIDError reports a SectionID that its SectionCache never handed out.
type UnknownIDError struct {
	ID SectionID
}

func (e *UnknownIDError) Error() string {
	return fmt.Sprintf("memimage: section cache has no section with id %d", e.ID)
}

// FallbackError wraps what the fallback read function returned for an address:
// its own error, or a byte count that does not fit the buffer it was given.
type FallbackError struct {
	ASID ASID
	Addr uint64
	Err  error
}

func (e *FallbackError) Error() string {
	return fmt.Sprintf("memimage: fallback read at %#x in %v: %v", e.Addr, e.ASID, e.Err)
}

func (e *FallbackError) Unwrap() error { return e.Err }

// ReadError is what ReadFull returns when it cannot fill the whole buffer: the
// first Valid bytes are good, and the byte at Addr could not be read because
// of Err.
type ReadError struct {
	ASID  ASID
	Addr  uint64 // the first address that could not be read
	Valid int    // how many bytes at the start of the buffer are valid
	Err   error
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("memimage: %d bytes valid, failed at %#x: %v", e.Valid, e.Addr, e.Err)
}

func (e *ReadError) Unwrap() error { return e.Err }

var errTooManySections = errors.New("section cache is full (2^32-2 sections)")
