package elfsym

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// readSymtab64 reads a 64-bit little-endian file's .symtab as debug/elf's
// Symbols would, but in one read of each section and with every name a
// substring of one copy of .strtab. debug/elf reads sections through
// growing buffers and allocates each name: on librustc_driver (165,000
// symbols, a 20 MB .strtab) that was 1.3 s of a 2.4 s `sonde perf` run,
// warm cache or not. ok is false when the file is not of that shape (the
// caller then uses debug/elf); an error names the entry or section at fault.
//
// grow is told the number of entries once the section has been read (so the
// count is the file's, not a header's claim), to size the caller's list.
func readSymtab64(f *elf.File, grow func(n int), keep func(es *elf.Symbol, index int)) (ok bool, err error) {
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB {
		return false, nil
	}
	sec := f.SectionByType(elf.SHT_SYMTAB)
	if sec == nil {
		return true, elf.ErrNoSymbols
	}
	if sec.Link == 0 || int(sec.Link) >= len(f.Sections) {
		return true, fmt.Errorf("string table index %d out of range", sec.Link)
	}
	strSec := f.Sections[sec.Link]
	if sec.Type == elf.SHT_NOBITS || strSec.Type == elf.SHT_NOBITS {
		return true, elf.ErrNoSymbols
	}
	if sec.Flags&elf.SHF_COMPRESSED != 0 || strSec.Flags&elf.SHF_COMPRESSED != 0 {
		return false, nil // rare; debug/elf inflates them
	}
	syms, err := readWhole(sec)
	if err != nil {
		return true, fmt.Errorf("reading %s: %w", sec.Name, err)
	}
	strs, err := readWhole(strSec)
	if err != nil {
		return true, fmt.Errorf("reading %s: %w", strSec.Name, err)
	}
	const entSize = 24 // Elf64_Sym
	if len(syms)%entSize != 0 {
		return true, fmt.Errorf("%s is %d bytes, not a whole number of %d-byte entries", sec.Name, len(syms), entSize)
	}
	grow(len(syms) / entSize)
	names := string(strs) // one copy; every name is a substring of it
	le := binary.LittleEndian
	var es elf.Symbol                        // one, reused: keep copies what it keeps
	for i := 1; i < len(syms)/entSize; i++ { // entry 0 is the null symbol
		e := syms[i*entSize : (i+1)*entSize]
		es = elf.Symbol{
			Info:    e[4],
			Other:   e[5],
			Section: elf.SectionIndex(le.Uint16(e[6:])),
			Value:   le.Uint64(e[8:]),
			Size:    le.Uint64(e[16:]),
		}
		off := le.Uint32(e[0:])
		if int64(off) >= int64(len(names)) {
			return true, fmt.Errorf("entry %d: name at %#x beyond %s (%d bytes)", i, off, strSec.Name, len(names))
		}
		end := strings.IndexByte(names[off:], 0)
		if end < 0 {
			return true, fmt.Errorf("entry %d: name at %#x not terminated in %s", i, off, strSec.Name)
		}
		es.Name = names[off : int(off)+end]
		keep(&es, i)
	}
	return true, nil
}

// readWhole reads a section's bytes in one read, after checking that the
// file holds them (its last byte reads), so a header's size cannot make it
// allocate more than the file has.
func readWhole(s *elf.Section) ([]byte, error) {
	if s.Size == 0 {
		return nil, nil
	}
	if s.Size > 1<<32 {
		return nil, fmt.Errorf("%d bytes: too large", s.Size)
	}
	var last [1]byte
	if _, err := s.ReadAt(last[:], int64(s.Size)-1); err != nil {
		return nil, fmt.Errorf("%d bytes past the file's end: %w", s.Size, err)
	}
	b := make([]byte, s.Size)
	if _, err := s.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return b, nil
}
