package debugfile

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
)

// The ELF header and program headers alone answer two questions asked of
// every file a profile maps before its first sample is unwound: where its
// segments lie and what its build-id is (in a PT_NOTE segment). debug/elf's
// NewFile reads and allocates every section header and the section names
// too: ~0.3 ms and a dozen page faults per file on the VM we measure on
// (bench/perf/RESULTS.md, session 20), where these reads take three small
// preads.

// maxProgs bounds the program headers read: real files have a dozen or two;
// a hostile header may claim 65,535 (PN_XNUM, extended numbering, is refused:
// callers fall back to debug/elf).
const maxProgs = 1024

// Progs reads the program headers of the ELF file r, without its section
// headers. It returns an error naming the offset when r is not an ELF file
// or its header lies (callers then try debug/elf, which says why).
func Progs(r io.ReaderAt) ([]elf.ProgHeader, binary.ByteOrder, error) {
	var ident [elf.EI_NIDENT]byte
	if _, err := r.ReadAt(ident[:], 0); err != nil {
		return nil, nil, fmt.Errorf("read ELF identification: %w", err)
	}
	if string(ident[:4]) != elf.ELFMAG {
		return nil, nil, &FormatError{What: "ELF header", Offset: 0, Msg: "no ELF magic"}
	}
	var order binary.ByteOrder
	switch elf.Data(ident[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		order = binary.LittleEndian
	case elf.ELFDATA2MSB:
		order = binary.BigEndian
	default:
		return nil, nil, &FormatError{What: "ELF header", Offset: elf.EI_DATA, Msg: fmt.Sprintf("data encoding %d", ident[elf.EI_DATA])}
	}
	if elf.Version(ident[elf.EI_VERSION]) != elf.EV_CURRENT {
		return nil, nil, &FormatError{What: "ELF header", Offset: elf.EI_VERSION, Msg: fmt.Sprintf("version %d", ident[elf.EI_VERSION])}
	}
	var phoff uint64
	var phentsize, phnum, want int
	switch elf.Class(ident[elf.EI_CLASS]) {
	case elf.ELFCLASS64:
		var h [64]byte
		if _, err := r.ReadAt(h[:], 0); err != nil {
			return nil, nil, fmt.Errorf("read ELF header: %w", err)
		}
		phoff = order.Uint64(h[32:])
		phentsize, phnum, want = int(order.Uint16(h[54:])), int(order.Uint16(h[56:])), 56
	case elf.ELFCLASS32:
		var h [52]byte
		if _, err := r.ReadAt(h[:], 0); err != nil {
			return nil, nil, fmt.Errorf("read ELF header: %w", err)
		}
		phoff = uint64(order.Uint32(h[28:]))
		phentsize, phnum, want = int(order.Uint16(h[42:])), int(order.Uint16(h[44:])), 32
	default:
		return nil, nil, &FormatError{What: "ELF header", Offset: elf.EI_CLASS, Msg: fmt.Sprintf("class %d", ident[elf.EI_CLASS])}
	}
	if phnum == 0 {
		return nil, order, nil
	}
	if phentsize != want || phnum > maxProgs || phoff > 1<<40 {
		return nil, nil, &FormatError{What: "ELF header", Offset: 0,
			Msg: fmt.Sprintf("%d program headers of %d bytes at %#x", phnum, phentsize, phoff)}
	}
	buf := make([]byte, phnum*phentsize)
	if _, err := r.ReadAt(buf, int64(phoff)); err != nil {
		return nil, nil, fmt.Errorf("read %d program headers at %#x: %w", phnum, phoff, err)
	}
	progs := make([]elf.ProgHeader, phnum)
	for i := range progs {
		b, p := buf[i*phentsize:], &progs[i]
		if want == 56 {
			p.Type, p.Flags = elf.ProgType(order.Uint32(b[0:])), elf.ProgFlag(order.Uint32(b[4:]))
			p.Off, p.Vaddr, p.Paddr = order.Uint64(b[8:]), order.Uint64(b[16:]), order.Uint64(b[24:])
			p.Filesz, p.Memsz, p.Align = order.Uint64(b[32:]), order.Uint64(b[40:]), order.Uint64(b[48:])
		} else {
			p.Type, p.Off = elf.ProgType(order.Uint32(b[0:])), uint64(order.Uint32(b[4:]))
			p.Vaddr, p.Paddr = uint64(order.Uint32(b[8:])), uint64(order.Uint32(b[12:]))
			p.Filesz, p.Memsz = uint64(order.Uint32(b[16:])), uint64(order.Uint32(b[20:]))
			p.Flags, p.Align = elf.ProgFlag(order.Uint32(b[24:])), uint64(order.Uint32(b[28:]))
		}
	}
	return progs, order, nil
}

// NoteBuildID returns the GNU build-id in the PT_NOTE segments of the ELF
// file r, or nil and no error when they hold none. BuildID looks at the
// note sections first; the two agree on the files linkers write, so a
// caller that must match a known build-id can take a match here as final
// and ask BuildID otherwise.
func NoteBuildID(r io.ReaderAt) ([]byte, error) {
	progs, order, err := Progs(r)
	if err != nil {
		return nil, err
	}
	for i, p := range progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		what := fmt.Sprintf("PT_NOTE segment %d", i)
		if p.Filesz > maxNoteSection || p.Off > 1<<40 {
			return nil, &FormatError{What: what, Offset: int64(p.Off), Msg: fmt.Sprintf("size %d exceeds the %d-byte limit for notes", p.Filesz, maxNoteSection)}
		}
		data, err := readBounded(io.NewSectionReader(r, int64(p.Off), int64(p.Filesz)), p.Filesz, what)
		if err != nil {
			return nil, err
		}
		id, err := parseNotes(data, order, noteAlign(p.Align))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if id != nil {
			return id, nil
		}
	}
	return nil, nil
}
