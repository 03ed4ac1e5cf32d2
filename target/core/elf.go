package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The ELF constants this package needs. debug/elf has them too, but reading
// the few fields ourselves lets the same code parse a core file, an executable
// on disk and an ELF header found in the core's memory, each through an
// io.ReaderAt, with errors that name the offset.
const (
	elfHeaderSize = 64 // ELF64 Ehdr
	progHeaderMin = 56 // ELF64 Phdr

	etExec = 2
	etDyn  = 3
	etCore = 4

	emX86_64 = 62

	ptLoad = 1
	ptNote = 4

	pfX = 1
	pfW = 2
	pfR = 4

	// maxProgramHeaders bounds how many program headers are read: the kernel
	// writes one per mapping, and vm.max_map_count defaults to 65530.
	maxProgramHeaders = 1 << 20
)

// Segment is one program header.
type Segment struct {
	Type     uint32
	Flags    uint32 // PF_R, PF_W, PF_X
	Offset   uint64 // p_offset: where the bytes start in the file
	Vaddr    uint64
	FileSize uint64 // p_filesz: bytes present in the file (when not truncated)
	MemSize  uint64 // p_memsz: size of the region in the process
	Align    uint64
}

// End is the first address after the segment's region (saturating).
func (s Segment) End() uint64 {
	if e := s.Vaddr + s.MemSize; e >= s.Vaddr {
		return e
	}
	return ^uint64(0)
}

// FormatError says the file is not an ELF file sonde can read, and where.
type FormatError struct {
	Offset int64 // offset of the offending field
	Msg    string
	Err    error // an I/O error behind it, if any
}

func (e *FormatError) Error() string {
	s := fmt.Sprintf("core: bad ELF file at offset %d: %s", e.Offset, e.Msg)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *FormatError) Unwrap() error { return e.Err }

// elfHeader holds the ELF64 header fields sonde uses.
type elfHeader struct {
	Type      uint16
	Machine   uint16
	PhOff     uint64
	PhEntSize uint64
	PhNum     uint64
}

// readELFHeader reads and checks an ELF64 little-endian x86-64 header.
func readELFHeader(r io.ReaderAt) (elfHeader, error) {
	var b [elfHeaderSize]byte
	if n, err := r.ReadAt(b[:], 0); n < len(b) {
		return elfHeader{}, &FormatError{int64(n), fmt.Sprintf("only %d bytes of the %d-byte ELF header are readable", n, elfHeaderSize), err}
	}
	if string(b[:4]) != "\x7fELF" {
		return elfHeader{}, &FormatError{0, "no ELF magic", nil}
	}
	if b[4] != 2 {
		return elfHeader{}, &FormatError{4, fmt.Sprintf("ELF class %d: only 64-bit files are supported", b[4]), nil}
	}
	if b[5] != 1 {
		return elfHeader{}, &FormatError{5, fmt.Sprintf("ELF data encoding %d: only little-endian files are supported", b[5]), nil}
	}
	le := binary.LittleEndian
	h := elfHeader{
		Type:      le.Uint16(b[16:]),
		Machine:   le.Uint16(b[18:]),
		PhOff:     le.Uint64(b[32:]),
		PhEntSize: uint64(le.Uint16(b[54:])),
		PhNum:     uint64(le.Uint16(b[56:])),
	}
	if h.Machine != emX86_64 {
		return h, &FormatError{18, fmt.Sprintf("machine %d: only x86-64 (62) is supported", h.Machine), nil}
	}
	if h.PhNum == 0xffff {
		// PN_XNUM: the real count is in section header 0's sh_info. The kernel
		// uses it for processes with 65535 or more mappings.
		shoff := le.Uint64(b[40:])
		var sh [4]byte
		if shoff > 1<<62 {
			return h, &FormatError{40, "e_phnum is PN_XNUM but e_shoff is out of range", nil}
		}
		if n, err := r.ReadAt(sh[:], int64(shoff)+44); n < 4 {
			return h, &FormatError{int64(shoff) + 44, "e_phnum is PN_XNUM but section header 0 is not readable", err}
		}
		h.PhNum = uint64(le.Uint32(sh[:]))
	}
	return h, nil
}

// readProgramHeaders reads h's program headers. size bounds where they may lie
// (the file size); a table that runs past it is a FormatError, since without
// its program headers nothing in the file can be located.
func readProgramHeaders(r io.ReaderAt, h elfHeader, size uint64) ([]Segment, error) {
	if h.PhNum == 0 {
		return nil, &FormatError{56, "no program headers", nil}
	}
	if h.PhNum > maxProgramHeaders {
		return nil, &FormatError{56, fmt.Sprintf("%d program headers is more than the %d sonde reads", h.PhNum, maxProgramHeaders), nil}
	}
	if h.PhEntSize < progHeaderMin || h.PhEntSize > 1024 {
		return nil, &FormatError{54, fmt.Sprintf("program header size %d is not in [%d, 1024]", h.PhEntSize, progHeaderMin), nil}
	}
	if h.PhOff > size || h.PhNum > (size-h.PhOff)/h.PhEntSize {
		return nil, &FormatError{32, fmt.Sprintf("%d program headers of %d bytes at offset %d run past the end of the %d-byte file", h.PhNum, h.PhEntSize, h.PhOff, size), nil}
	}
	buf := make([]byte, h.PhNum*h.PhEntSize)
	if n, err := r.ReadAt(buf, int64(h.PhOff)); n < len(buf) {
		return nil, &FormatError{int64(h.PhOff) + int64(n), "program headers are not readable", errOr(err, io.ErrUnexpectedEOF)}
	}
	le := binary.LittleEndian
	segs := make([]Segment, h.PhNum)
	for i := range segs {
		p := buf[uint64(i)*h.PhEntSize:]
		segs[i] = Segment{
			Type:     le.Uint32(p[0:]),
			Flags:    le.Uint32(p[4:]),
			Offset:   le.Uint64(p[8:]),
			Vaddr:    le.Uint64(p[16:]),
			FileSize: le.Uint64(p[32:]),
			MemSize:  le.Uint64(p[40:]),
			Align:    le.Uint64(p[48:]),
		}
	}
	return segs, nil
}

func errOr(err, fallback error) error {
	if err == nil {
		return fallback
	}
	return err
}

// NT_GNU_BUILD_ID is the note type of a build-id (owner "GNU").
const ntGNUBuildID = 3

// maxBuildIDNotes bounds how many note bytes are read looking for a build-id.
const maxBuildIDNotes = 64 << 10

var errNoBuildID = errors.New("no NT_GNU_BUILD_ID note")

// readBuildID finds the GNU build-id of an ELF image whose file offset 0 is at
// offset 0 of r: a file on disk, or the first mapping of a file in memory
// (where p_offset is the distance from the mapping's start). It looks only at
// PT_NOTE segments, as the dynamic loader and the kernel do.
func readBuildID(r io.ReaderAt, size uint64) ([]byte, error) {
	h, err := readELFHeader(r)
	if err != nil {
		return nil, err
	}
	segs, err := readProgramHeaders(r, h, size)
	if err != nil {
		return nil, err
	}
	for _, s := range segs {
		if s.Type != ptNote || s.FileSize == 0 || s.FileSize > maxBuildIDNotes || s.Offset > size {
			continue
		}
		buf := make([]byte, s.FileSize)
		n, _ := r.ReadAt(buf, int64(s.Offset))
		notes, _ := ParseNotes(buf[:n], int64(s.Offset), s.Align)
		for _, nt := range notes {
			if nt.Type == ntGNUBuildID && nt.Name == "GNU" && len(nt.Desc) > 0 {
				return append([]byte(nil), nt.Desc...), nil
			}
		}
	}
	return nil, errNoBuildID
}
