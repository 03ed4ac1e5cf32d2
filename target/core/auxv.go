package core

import (
	"encoding/binary"
	"fmt"
)

// Auxiliary vector tags sonde looks at (include/uapi/linux/auxvec.h).
const (
	AT_NULL         = 0
	AT_PHDR         = 3 // address of the executable's program headers
	AT_PHENT        = 4
	AT_PHNUM        = 5
	AT_PAGESZ       = 6
	AT_BASE         = 7 // load address of the dynamic linker
	AT_ENTRY        = 9 // the executable's entry point (after relocation)
	AT_EXECFN       = 31
	AT_SYSINFO_EHDR = 33 // the vDSO's ELF header
	AT_RANDOM       = 25
)

// AuxEntry is one entry of the auxiliary vector.
type AuxEntry struct {
	Tag   uint64
	Value uint64
}

// Auxv is the process's auxiliary vector (NT_AUXV), without its AT_NULL end.
type Auxv []AuxEntry

// Lookup returns the value of the first entry with tag.
func (a Auxv) Lookup(tag uint64) (uint64, bool) {
	for _, e := range a {
		if e.Tag == tag {
			return e.Value, true
		}
	}
	return 0, false
}

// ParseAuxv decodes an NT_AUXV descriptor: (tag, value) pairs of 8-byte words
// up to AT_NULL. A descriptor that is not a whole number of pairs, or that has
// no AT_NULL, yields the entries it has and a *NoteError.
func ParseAuxv(desc []byte) (Auxv, error) {
	le := binary.LittleEndian
	var out Auxv
	for off := 0; off+16 <= len(desc); off += 16 {
		tag := le.Uint64(desc[off:])
		if tag == AT_NULL {
			return out, nil
		}
		out = append(out, AuxEntry{Tag: tag, Value: le.Uint64(desc[off+8:])})
	}
	if len(desc)%16 != 0 {
		return out, &NoteError{Type: NT_AUXV, Msg: fmt.Sprintf("%d bytes is not a whole number of 16-byte entries", len(desc))}
	}
	return out, &NoteError{Type: NT_AUXV, Msg: "no AT_NULL entry at the end"}
}
