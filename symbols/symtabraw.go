package symbols

// The raw ELF symbol tables a Binary's function-symbol index
// (funcsyms.go) is read from.

import (
	"debug/elf"
	"errors"
)

// symEntrySize is sizeof(Elf64_Sym).
const symEntrySize = 24

// symbolFiles are the ELF files b's symbol table is built from.
func (b *Binary) symbolFiles() []*elf.File {
	var out []*elf.File
	for _, f := range []*elfFile{b.ef, b.debug} {
		if f != nil {
			out = append(out, f.f)
		}
	}
	if b.found != nil && b.found.MiniDebugInfo != nil {
		out = append(out, b.found.MiniDebugInfo)
	}
	return out
}

// fileBytes returns the bytes of an uncompressed section of e as they are
// in the file (a symbol or string table), without copying them.
func (e *elfFile) fileBytes(s *elf.Section) ([]byte, error) {
	if s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_COMPRESSED != 0 {
		return s.Data()
	}
	if s.Offset > uint64(len(e.data)) || s.Size > uint64(len(e.data))-s.Offset {
		return nil, errors.New("section extends past the end of the file")
	}
	return e.data[s.Offset : s.Offset+s.Size], nil
}
