package symbols

import (
	"debug/elf"
	"encoding/binary"
	"runtime/debug"
)

// maxRelocs bounds the relocations read from one section.
const maxRelocs = 1 << 20

// rX86_64IRelative is R_X86_64_IRELATIVE: the slot gets what the resolver at
// the addend returns, when the dynamic linker relocates the module.
const rX86_64IRelative = 37

// IRelativeSlots returns the link-time addresses of the slots (GOT entries)
// that IRELATIVE relocations fill with the result of the indirect-function
// resolver at link-time address resolver: after relocation they hold the
// implementation the resolver chose (what a library's own calls of the
// function run).
func (b *Binary) IRelativeSlots(resolver uint64) (slots []uint64, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer b.catchFault(&err)
	if b.ef == nil || b.ef.f.Machine != elf.EM_X86_64 {
		return nil, nil
	}
	for _, sec := range b.ef.f.Sections {
		if sec.Type != elf.SHT_RELA || sec.Entsize != 24 || sec.Size/24 > maxRelocs {
			continue
		}
		data, err := sec.Data()
		if err != nil {
			continue
		}
		for i := 0; i+24 <= len(data); i += 24 {
			info := binary.LittleEndian.Uint64(data[i+8:])
			if uint32(info) == rX86_64IRelative && binary.LittleEndian.Uint64(data[i+16:]) == resolver {
				slots = append(slots, binary.LittleEndian.Uint64(data[i:]))
			}
		}
	}
	return slots, nil
}
