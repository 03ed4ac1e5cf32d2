package core

import (
	"encoding/binary"
	"fmt"
)

// The ELF constants this package needs. debug/elf has them too, but its types
// would leak into the parsers; plain numbers keep them data-first.
const (
	elfHeaderSize = 64 // ELF64 Ehdr
	progHeaderMin = 56 // ELF64 Phdr

	etCore   = 4
	emX86_64 = 62

	ptLoad = 1
	ptNote = 4

	pfX = 1
	pfW = 2
	pfR = 4
)

// Segment is one program header of the core.
type Segment struct {
	Type     uint32
	Flags    uint32 // PF_R, PF_W, PF_X
	Offset   uint64 // p_offset: where the bytes start in the core file
	Vaddr    uint64
	FileSize uint64 // p_filesz: bytes present in the file (when not truncated)
	MemSize  uint64 // p_memsz: size of the region in the process
	Align    uint64
}

// End is the first address after the segment's region.
func (s Segment) End() uint64 { return s.Vaddr + s.MemSize }

// FormatError says the file is not an ELF core sonde can read, and where.
type FormatError struct {
	Offset int64 // file offset of the offending field
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("core: bad ELF core at file offset %d: %s", e.Offset, e.Msg)
}

// parseELF checks the ELF header of data (the whole core, possibly truncated)
// and returns its program headers. Program headers past the end of the file are
// a FormatError: without them nothing can be located.
func parseELF(data []byte) ([]Segment, error) {
	if len(data) < elfHeaderSize {
		return nil, &FormatError{0, fmt.Sprintf("file has %d bytes, an ELF64 header needs %d", len(data), elfHeaderSize)}
	}
	if string(data[:4]) != "\x7fELF" {
		return nil, &FormatError{0, "no ELF magic"}
	}
	if data[4] != 2 {
		return nil, &FormatError{4, fmt.Sprintf("ELF class %d: only 64-bit cores are supported", data[4])}
	}
	if data[5] != 1 {
		return nil, &FormatError{5, fmt.Sprintf("ELF data encoding %d: only little-endian cores are supported", data[5])}
	}
	le := binary.LittleEndian
	if t := le.Uint16(data[16:]); t != etCore {
		return nil, &FormatError{16, fmt.Sprintf("ELF type %d is not ET_CORE (4)", t)}
	}
	if m := le.Uint16(data[18:]); m != emX86_64 {
		return nil, &FormatError{18, fmt.Sprintf("machine %d: only x86-64 (62) is supported", m)}
	}
	phoff := le.Uint64(data[32:])
	phentsize := uint64(le.Uint16(data[54:]))
	phnum := uint64(le.Uint16(data[56:]))
	if phnum == 0xffff {
		// PN_XNUM: the real count is in section header 0's sh_info. The kernel
		// uses it for processes with 65535+ mappings.
		n, err := extendedPhnum(data)
		if err != nil {
			return nil, err
		}
		phnum = n
	}
	if phnum == 0 {
		return nil, &FormatError{56, "no program headers"}
	}
	if phentsize < progHeaderMin {
		return nil, &FormatError{54, fmt.Sprintf("program header size %d < %d", phentsize, progHeaderMin)}
	}
	size := uint64(len(data))
	if phoff > size || phnum > (size-phoff)/phentsize {
		return nil, &FormatError{32, fmt.Sprintf("%d program headers of %d bytes at offset %d run past the end of the %d-byte file", phnum, phentsize, phoff, size)}
	}
	segs := make([]Segment, phnum)
	for i := range segs {
		p := data[phoff+uint64(i)*phentsize:]
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

// extendedPhnum reads the program header count from section header 0.
func extendedPhnum(data []byte) (uint64, error) {
	le := binary.LittleEndian
	shoff := le.Uint64(data[40:])
	if shoff > uint64(len(data)) || uint64(len(data))-shoff < 64 {
		return 0, &FormatError{40, "e_phnum is PN_XNUM but section header 0 is not in the file"}
	}
	return uint64(le.Uint32(data[shoff+44:])), nil
}
