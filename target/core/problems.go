package core

import (
	"errors"
	"fmt"

	"github.com/sondedbg/sonde/memimage"
)

// ProblemKind classifies what is wrong with a core or what it left out.
type ProblemKind int

const (
	// ProblemBadNote: a note is malformed (lying sizes, short descriptors);
	// the notes before it were used, it and possibly later ones were not.
	ProblemBadNote ProblemKind = iota + 1
	// ProblemBadSegment: a program header contradicts itself (p_filesz >
	// p_memsz, a range that wraps) or overlaps another PT_LOAD.
	ProblemBadSegment
	// ProblemTruncated: the core file ends before a segment's bytes do.
	ProblemTruncated
	// ProblemNotDumped: addresses the process had mapped whose bytes are in
	// neither the core nor a file that may stand in for them.
	ProblemNotDumped
	// ProblemFileMissing: a mapped file was found nowhere.
	ProblemFileMissing
	// ProblemFileChanged: a candidate for a mapped file is not the file the
	// process had mapped (build-id, first page, size or mtime disagree); it was
	// not used.
	ProblemFileChanged
	// ProblemMissingInfo: a note sonde needs is absent (no NT_PRPSINFO, no
	// NT_FILE, ...), so what it would have said is guessed or unavailable;
	// or the core lacks a kind of memory that limits what reads can trust.
	ProblemMissingInfo
)

func (k ProblemKind) String() string {
	switch k {
	case ProblemBadNote:
		return "bad note"
	case ProblemBadSegment:
		return "bad segment"
	case ProblemTruncated:
		return "truncated"
	case ProblemNotDumped:
		return "not dumped"
	case ProblemFileMissing:
		return "file missing"
	case ProblemFileChanged:
		return "file changed"
	case ProblemMissingInfo:
		return "missing info"
	}
	return fmt.Sprintf("problem(%d)", int(k))
}

// Problem is one thing the core could not provide, with enough detail to act
// on: which addresses, which file, where in the core.
type Problem struct {
	Kind ProblemKind
	// Start and End bound the addresses affected (End == 0: none in particular).
	Start, End uint64
	// Path is the mapped file concerned, if any.
	Path string
	// Offset is the position in the core file concerned, or -1.
	Offset int64
	// Err says what exactly went wrong.
	Err error
}

func (p Problem) String() string {
	s := p.Kind.String()
	if p.End > p.Start {
		s += fmt.Sprintf(" 0x%x-0x%x", p.Start, p.End)
	}
	if p.Path != "" {
		s += " " + p.Path
	}
	if p.Offset >= 0 {
		s += fmt.Sprintf(" (core offset %d)", p.Offset)
	}
	if p.Err != nil {
		s += ": " + p.Err.Error()
	}
	return s
}

// MissingError is the cause of a *target.MemoryError for bytes the core cannot
// supply: it names the whole range that is missing and why. It matches
// memimage.ErrNoMap under errors.Is.
type MissingError struct {
	Start, End uint64
	// Mapped is false for addresses the process did not have mapped at all.
	Mapped bool
	Reason string
}

func (e *MissingError) Error() string {
	if !e.Mapped {
		return fmt.Sprintf("core: 0x%x-0x%x is not mapped in the process", e.Start, e.End)
	}
	return fmt.Sprintf("core: 0x%x-0x%x is not available: %s", e.Start, e.End, e.Reason)
}

func (e *MissingError) Is(target error) bool { return target == memimage.ErrNoMap }

// errReadOnly is the cause of every ErrUnsupported this backend returns.
var errReadOnly = errors.New("a core file is read-only")
