package elfsym

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// x86-64 relocation types that fill the GOT slots PLT stubs jump through.
const (
	rX86_64GlobDat   = 6  // R_X86_64_GLOB_DAT: .plt.got stubs (address also taken)
	rX86_64JumpSlot  = 7  // R_X86_64_JUMP_SLOT: .plt / .plt.sec stubs
	rX86_64Irelative = 37 // R_X86_64_IRELATIVE: ifuncs in static or -z now binaries
)

// maxRelocSection bounds one relocation section (24 bytes per entry).
const maxRelocSection = 256 << 20

// pltSymbols synthesizes "name@plt" symbols for the PLT stubs of an x86-64
// file. Each stub ends in `jmp *slot(%rip)`; the relocation that fills that
// GOT slot names the function. This handles the lazy-binding .plt, the IBT
// split into .plt + .plt.sec (-fcf-protection, -z ibtplt), and .plt.got,
// whatever instruction padding the linker chose, because it decodes the
// jump instead of assuming an entry layout. Stubs whose slot has no
// relocation (PLT0, lazy IBT trampolines) stay unnamed, as in gdb.
func pltSymbols(f *elf.File, dyn []elf.Symbol) ([]Symbol, error) {
	if f.Machine != elf.EM_X86_64 || f.Class != elf.ELFCLASS64 {
		return nil, nil // other architectures: no synthetic names yet
	}
	// Like binutils (and so gdb), name stubs only in dynamically linked
	// files: a static binary's .plt holds IRELATIVE stubs of 8 bytes with no
	// entry size recorded, and neither tool names them.
	if f.Section(".dynamic") == nil {
		return nil, nil
	}
	var plts []*elf.Section
	for _, s := range f.Sections {
		switch s.Name {
		case ".plt", ".plt.sec", ".plt.got":
			if s.Type == elf.SHT_PROGBITS && s.Size > 0 {
				plts = append(plts, s)
			}
		}
	}
	if len(plts) == 0 {
		return nil, nil
	}
	slots, err := gotSlotNames(f, dyn)
	if err != nil {
		return nil, err
	}
	var out []Symbol
	for _, s := range plts {
		if s.Size > maxRelocSection {
			return out, fmt.Errorf("section %s: size %d is implausible for a PLT", s.Name, s.Size)
		}
		data, err := s.Data()
		if err != nil {
			return out, fmt.Errorf("read section %s: %w", s.Name, err)
		}
		out = append(out, decodePLT(data, s.Addr, s.Entsize, slots)...)
	}
	return out, nil
}

// decodePLT walks PLT entries of entsize bytes (16 when the section does not
// say 8 or 16) starting at address base and names each entry whose GOT
// jump targets a slot in slots.
func decodePLT(data []byte, base, entsize uint64, slots map[uint64]string) []Symbol {
	if entsize != 8 && entsize != 16 {
		entsize = 16
	}
	var out []Symbol
	for off := uint64(0); off+entsize <= uint64(len(data)); off += entsize {
		slot, ok := pltJumpSlot(data[off:off+entsize], base+off)
		if !ok {
			continue
		}
		name, ok := slots[slot]
		if !ok {
			continue
		}
		out = append(out, Symbol{Name: name + "@plt", Addr: base + off, Size: entsize,
			Kind: KindFunc, Bind: elf.STB_LOCAL, Origin: OriginPLT})
	}
	return out
}

// pltJumpSlot decodes `jmp *disp32(%rip)` (ff 25) at the start of one PLT
// entry at address addr, possibly after endbr64 (f3 0f 1e fa) and/or a bnd
// prefix (f2), and returns the GOT slot it reads.
func pltJumpSlot(e []byte, addr uint64) (uint64, bool) {
	p := 0
	if len(e) >= 4 && e[0] == 0xf3 && e[1] == 0x0f && e[2] == 0x1e && e[3] == 0xfa {
		p = 4
	}
	if p < len(e) && e[p] == 0xf2 {
		p++
	}
	if p+6 > len(e) || e[p] != 0xff || e[p+1] != 0x25 {
		return 0, false
	}
	disp := int64(int32(binary.LittleEndian.Uint32(e[p+2:])))
	next := addr + uint64(p) + 6
	return next + uint64(disp), true
}

// gotSlotNames maps each GOT slot filled by a JUMP_SLOT, GLOB_DAT or
// IRELATIVE relocation to the name binutils gives the stub: the dynamic
// symbol's name (dyn is f's .dynsym as debug/elf returns it), or
// "*ABS*+0x<resolver>" for an IRELATIVE.
func gotSlotNames(f *elf.File, dyn []elf.Symbol) (map[uint64]string, error) {
	slots := make(map[uint64]string)
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA {
			continue
		}
		if s.Entsize != 0 && s.Entsize != 24 {
			return nil, fmt.Errorf("section %s: entry size %d, want 24", s.Name, s.Entsize)
		}
		if s.Size > maxRelocSection {
			return nil, fmt.Errorf("section %s: size %d is implausible", s.Name, s.Size)
		}
		if s.Flags&elf.SHF_ALLOC == 0 {
			continue // relocations of a relocatable object, not dynamic ones
		}
		data, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("read section %s: %w", s.Name, err)
		}
		if err := parseRela(data, f.ByteOrder, dyn, slots); err != nil {
			return nil, fmt.Errorf("section %s: %w", s.Name, err)
		}
	}
	return slots, nil
}

// parseRela reads Elf64_Rela entries (offset, info, addend) into slots.
func parseRela(data []byte, order binary.ByteOrder, dyn []elf.Symbol, slots map[uint64]string) error {
	if len(data)%24 != 0 {
		return fmt.Errorf("size %d is not a multiple of 24", len(data))
	}
	for off := 0; off+24 <= len(data); off += 24 {
		rOff := order.Uint64(data[off:])
		info := order.Uint64(data[off+8:])
		addend := int64(order.Uint64(data[off+16:]))
		sym, typ := info>>32, uint32(info)
		switch typ {
		case rX86_64JumpSlot, rX86_64GlobDat:
			// .dynsym as returned by debug/elf omits the null symbol 0.
			if sym == 0 || sym > uint64(len(dyn)) {
				if sym != 0 {
					return fmt.Errorf("relocation at offset %#x: symbol index %d out of range (%d symbols)", off, sym, len(dyn))
				}
				continue
			}
			name, _ := StripVersion(dyn[sym-1].Name)
			if name == "" {
				continue
			}
			if _, dup := slots[rOff]; !dup {
				slots[rOff] = name
			}
		case rX86_64Irelative:
			if _, dup := slots[rOff]; !dup {
				slots[rOff] = fmt.Sprintf("*ABS*+0x%x", uint64(addend))
			}
		}
	}
	return nil
}
