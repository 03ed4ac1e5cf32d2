package modules

import (
	"encoding/binary"
	"fmt"
)

// The dynamic linker publishes its list of loaded objects in struct r_debug,
// whose address the executable's DT_DEBUG dynamic entry holds once the linker has
// started. Layouts (LP64):
//
//	struct r_debug   { int r_version; link_map *r_map; Elf64_Addr r_brk; int r_state; Elf64_Addr r_ldbase; }
//	struct link_map  { Elf64_Addr l_addr; char *l_name; Elf64_Dyn *l_ld; link_map *l_next, *l_prev; }
const (
	dtNull  = 0
	dtDebug = 21

	rDebugSize     = 40
	linkMapSize    = 40
	maxDynEntries  = 4096
	maxLinkMapLen  = 16384
	maxPathLen     = 4096
	rStateConsist  = 0
	rStateAdd      = 1
	rStateDelete   = 2
	rDebugOffMap   = 8
	rDebugOffBrk   = 16
	rDebugOffState = 24
)

// RDebug is the dynamic linker's published state.
type RDebug struct {
	Addr  uint64 // where struct r_debug lives
	Map   uint64 // head of the link_map list
	Brk   uint64 // the address the linker calls on every change (_dl_debug_state)
	State int    // 0 consistent, 1 adding, 2 deleting
}

// LinkMapEntry is one loaded object as the dynamic linker sees it.
type LinkMapEntry struct {
	Addr    uint64 // the entry's own address
	Bias    uint64 // l_addr
	Name    string // l_name ("" for the executable)
	Dynamic uint64 // l_ld
}

// FindRDebug locates r_debug through the executable's DT_DEBUG entry. It
// returns nil with no error when the linker has not published it yet (a process
// stopped at its first instruction) or the executable is static.
func FindRDebug(p Process, main *Module) (*RDebug, error) {
	if main == nil || main.Dynamic == 0 {
		return nil, nil
	}
	var addr uint64
	for i := uint64(0); i < maxDynEntries; i++ {
		var b [16]byte
		at := main.Dynamic + 16*i
		if n, err := p.ReadMemory(at, b[:]); n < 16 {
			return nil, fmt.Errorf("modules: reading the dynamic section at 0x%x: %v", at, err)
		}
		tag := binary.LittleEndian.Uint64(b[:])
		if tag == dtNull {
			break
		}
		if tag == dtDebug {
			addr = binary.LittleEndian.Uint64(b[8:])
			break
		}
	}
	if addr == 0 {
		return nil, nil
	}
	return ReadRDebug(p, addr)
}

// ReadRDebug reads struct r_debug at addr.
func ReadRDebug(p Process, addr uint64) (*RDebug, error) {
	var b [rDebugSize]byte
	if n, err := p.ReadMemory(addr, b[:]); n < rDebugSize {
		return nil, fmt.Errorf("modules: reading r_debug at 0x%x: %v", addr, err)
	}
	return &RDebug{
		Addr:  addr,
		Map:   binary.LittleEndian.Uint64(b[rDebugOffMap:]),
		Brk:   binary.LittleEndian.Uint64(b[rDebugOffBrk:]),
		State: int(int32(binary.LittleEndian.Uint32(b[rDebugOffState:]))),
	}, nil
}

// LinkMap walks the link_map list from head. The walk is bounded and stops at a
// cycle, so a corrupt list in a core file cannot hang it.
func LinkMap(p Process, head uint64) ([]LinkMapEntry, error) {
	var out []LinkMapEntry
	seen := map[uint64]bool{}
	for addr := head; addr != 0; {
		if seen[addr] || len(out) >= maxLinkMapLen {
			return out, fmt.Errorf("modules: link_map list loops or is too long at 0x%x", addr)
		}
		seen[addr] = true
		var b [linkMapSize]byte
		if n, err := p.ReadMemory(addr, b[:]); n < linkMapSize {
			return out, fmt.Errorf("modules: reading link_map entry at 0x%x: %v", addr, err)
		}
		e := LinkMapEntry{
			Addr:    addr,
			Bias:    binary.LittleEndian.Uint64(b[0:]),
			Dynamic: binary.LittleEndian.Uint64(b[16:]),
		}
		if name := binary.LittleEndian.Uint64(b[8:]); name != 0 {
			e.Name = readString(p, name)
		}
		out = append(out, e)
		addr = binary.LittleEndian.Uint64(b[24:])
	}
	return out, nil
}

// readString reads a NUL-terminated string of at most maxPathLen bytes.
func readString(p Process, addr uint64) string {
	var out []byte
	buf := make([]byte, 256)
	for len(out) < maxPathLen {
		n, _ := p.ReadMemory(addr+uint64(len(out)), buf)
		if n == 0 {
			break
		}
		for i := 0; i < n; i++ {
			if buf[i] == 0 {
				return string(append(out, buf[:i]...))
			}
		}
		out = append(out, buf[:n]...)
	}
	return string(out)
}

// applyLinkMap takes the dynamic linker's word for each module's bias (matching
// entries by their dynamic section, which lies inside the module), and names
// modules the memory map could not (e.g. memfd or deleted files).
func applyLinkMap(p Process, mods List) error {
	rd, err := FindRDebug(p, mods.Main())
	if err != nil || rd == nil {
		return err
	}
	entries, err := LinkMap(p, rd.Map)
	for _, e := range entries {
		if e.Dynamic == 0 {
			continue
		}
		m := mods.ForAddress(e.Dynamic)
		if m == nil || m.VDSO {
			continue
		}
		m.Bias = e.Bias
		if m.Dynamic == 0 {
			m.Dynamic = e.Dynamic
		}
	}
	return err
}
