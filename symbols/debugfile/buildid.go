package debugfile

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
)

// noteTypeGNUBuildID is NT_GNU_BUILD_ID, in a note whose owner is "GNU".
const noteTypeGNUBuildID = 3

// maxNoteSection bounds how much of a note section or segment is read; real
// note sections are a few hundred bytes, a hostile header may claim gigabytes.
const maxNoteSection = 1 << 20

// BuildID returns the GNU build-id of f (the descriptor of its NT_GNU_BUILD_ID
// note), looking at SHT_NOTE sections first and at PT_NOTE segments when the
// file has no section headers. It returns nil and no error when f has no
// build-id.
func BuildID(f *elf.File) ([]byte, error) {
	sawSections := false
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		sawSections = true
		data, err := readBounded(s.Open(), s.Size, s.Name)
		if err != nil {
			return nil, err
		}
		id, err := parseNotes(data, f.ByteOrder, noteAlign(s.Addralign))
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", s.Name, err)
		}
		if id != nil {
			return id, nil
		}
	}
	if sawSections {
		return nil, nil
	}
	for i, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		data, err := readBounded(p.Open(), p.Filesz, fmt.Sprintf("PT_NOTE segment %d", i))
		if err != nil {
			return nil, err
		}
		id, err := parseNotes(data, f.ByteOrder, noteAlign(p.Align))
		if err != nil {
			return nil, fmt.Errorf("PT_NOTE segment %d: %w", i, err)
		}
		if id != nil {
			return id, nil
		}
	}
	return nil, nil
}

// ParseBuildIDNotes scans the notes in data (the contents of a note section
// with 4-byte alignment, as .note.gnu.build-id is) and returns the
// descriptor of the first GNU build-id note, or nil if there is none.
func ParseBuildIDNotes(data []byte, order binary.ByteOrder) ([]byte, error) {
	return parseNotes(data, order, 4)
}

// noteAlign maps a section's or segment's alignment to the padding rule of
// its notes: 8-byte aligned note sections (.note.gnu.property) pad name and
// descriptor to 8 bytes, everything else to 4.
func noteAlign(a uint64) int {
	if a == 8 {
		return 8
	}
	return 4
}

func parseNotes(data []byte, order binary.ByteOrder, align int) ([]byte, error) {
	off := 0
	for off < len(data) {
		if len(data)-off < 12 {
			return nil, &FormatError{What: "note", Offset: int64(off), Msg: "truncated note header"}
		}
		namesz := uint64(order.Uint32(data[off:]))
		descsz := uint64(order.Uint32(data[off+4:]))
		typ := order.Uint32(data[off+8:])
		// Padding aligns offsets, not sizes: in an 8-aligned note the
		// 4-byte "GNU\0" name ends at 16, already aligned.
		nameOff := uint64(off) + 12
		descOff := roundUp(nameOff+namesz, align)
		end := roundUp(descOff+descsz, align)
		// descOff+descsz (not padded) may end exactly at the section end.
		if descOff > uint64(len(data)) || descOff+descsz > uint64(len(data)) {
			return nil, &FormatError{What: "note", Offset: int64(off),
				Msg: fmt.Sprintf("name size %d / descriptor size %d run past the end (%d bytes)", namesz, descsz, len(data))}
		}
		name := data[nameOff : nameOff+namesz]
		if typ == noteTypeGNUBuildID && string(name) == "GNU\x00" {
			if descsz == 0 {
				return nil, &FormatError{What: "build-id note", Offset: int64(off), Msg: "empty build-id"}
			}
			return append([]byte(nil), data[descOff:descOff+descsz]...), nil
		}
		if end > uint64(len(data)) {
			break // last note, padding cut off: nothing more to read
		}
		off = int(end)
	}
	return nil, nil
}

func roundUp(n uint64, align int) uint64 {
	a := uint64(align)
	return (n + a - 1) &^ (a - 1)
}

// readBounded reads a section or segment of the claimed size, refusing sizes
// beyond maxNoteSection so a lying header cannot make us allocate gigabytes.
func readBounded(r io.Reader, size uint64, what string) ([]byte, error) {
	if size > maxNoteSection {
		return nil, &FormatError{What: what, Msg: fmt.Sprintf("size %d exceeds the %d-byte limit for notes", size, maxNoteSection)}
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return buf, nil
}
