package core

import (
	"encoding/binary"
	"fmt"
)

// Note types of Linux core files (include/uapi/linux/elf.h).
const (
	NT_PRSTATUS   = 1
	NT_FPREGSET   = 2 // the FXSAVE image (user_fpregs_struct), 512 bytes
	NT_PRPSINFO   = 3
	NT_AUXV       = 6
	NT_SIGINFO    = 0x53494749 // "SIGI"
	NT_FILE       = 0x46494c45 // "FILE"
	NT_X86_XSTATE = 0x202      // the XSAVE area, owner "LINUX"
)

// Note is one ELF note. Desc aliases the core's mapping: copy what you keep.
type Note struct {
	Name   string // the owner, without its NUL: "CORE", "LINUX"
	Type   uint32
	Desc   []byte
	Offset int64 // file offset of the note header
}

// NoteError says what is wrong with a note and where it is in the file.
type NoteError struct {
	Type   uint32 // the note type, 0 if the header itself is bad
	Offset int64  // file offset of the note (or of its segment)
	Msg    string
}

func (e *NoteError) Error() string {
	if e.Type != 0 {
		return fmt.Sprintf("core: note %s at file offset %d: %s", noteTypeName(e.Type), e.Offset, e.Msg)
	}
	return fmt.Sprintf("core: note at file offset %d: %s", e.Offset, e.Msg)
}

func noteTypeName(t uint32) string {
	switch t {
	case NT_PRSTATUS:
		return "NT_PRSTATUS"
	case NT_FPREGSET:
		return "NT_FPREGSET"
	case NT_PRPSINFO:
		return "NT_PRPSINFO"
	case NT_AUXV:
		return "NT_AUXV"
	case NT_SIGINFO:
		return "NT_SIGINFO"
	case NT_FILE:
		return "NT_FILE"
	case NT_X86_XSTATE:
		return "NT_X86_XSTATE"
	}
	return fmt.Sprintf("type 0x%x", t)
}

// ParseNotes walks the notes of one PT_NOTE segment. data is the segment's bytes
// (as many as the file holds), base their file offset, align the segment's
// p_align (4 unless it is 8; core notes use 4). It returns every note up to the
// first malformed one, and a *NoteError for that one: a size that runs past the
// segment's end, a name without its NUL. The result never holds more notes than
// len(data)/12, so a lying header cannot make it grow without bound.
func ParseNotes(data []byte, base int64, align uint64) ([]Note, error) {
	pad := uint64(4)
	if align == 8 {
		pad = 8
	}
	le := binary.LittleEndian
	var notes []Note
	off := uint64(0)
	size := uint64(len(data))
	for off < size {
		at := base + int64(off)
		if size-off < 12 {
			return notes, &NoteError{Offset: at, Msg: fmt.Sprintf("%d trailing bytes are too few for a note header (12)", size-off)}
		}
		namesz := uint64(le.Uint32(data[off:]))
		descsz := uint64(le.Uint32(data[off+4:]))
		typ := le.Uint32(data[off+8:])
		p := off + 12
		if namesz > size-p {
			return notes, &NoteError{Type: typ, Offset: at, Msg: fmt.Sprintf("name size %d runs past the segment end (%d bytes left)", namesz, size-p)}
		}
		name := data[p : p+namesz]
		if namesz > 0 {
			if name[namesz-1] != 0 {
				return notes, &NoteError{Type: typ, Offset: at, Msg: "name is not NUL-terminated"}
			}
			name = name[:namesz-1]
		}
		p = alignUp(p+namesz, pad)
		if p > size || descsz > size-p {
			return notes, &NoteError{Type: typ, Offset: at, Msg: fmt.Sprintf("descriptor size %d runs past the segment end (%d bytes left)", descsz, size-min(p, size))}
		}
		notes = append(notes, Note{Name: string(name), Type: typ, Desc: data[p : p+descsz : p+descsz], Offset: at})
		off = alignUp(p+descsz, pad) // p+descsz <= size < 2^63: no overflow
	}
	return notes, nil
}

func alignUp(v, a uint64) uint64 { return (v + a - 1) &^ (a - 1) }
