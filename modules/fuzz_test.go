package modules

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
)

// fuzzProc is a process made of fuzz input: memory blobs at fixed
// addresses, a memory map with fuzzed sizes and offsets, and an auxv.
type fuzzProc struct {
	regions []target.MemoryRegion
	blobs   map[uint64][]byte // base -> contents
	auxv    []byte
}

func (p *fuzzProc) MemoryMap() ([]target.MemoryRegion, error) { return p.regions, nil }
func (p *fuzzProc) Auxv() ([]byte, error)                     { return p.auxv, nil }

func (p *fuzzProc) ReadMemory(addr uint64, b []byte) (int, error) {
	for base, blob := range p.blobs {
		if addr >= base && addr-base < uint64(len(blob)) {
			return copy(b, blob[addr-base:]), nil
		}
	}
	return 0, os.ErrNotExist
}

const (
	fuzzMainBase = 0x400000
	fuzzVDSOBase = 0x7fff0000
	fuzzHeapBase = 0x10000000
)

// FuzzFind: the modules of a process whose memory (ELF and program
// headers read from memory, the dynamic section, r_debug and the link_map
// list with its strings, the vDSO image), memory map and auxiliary vector
// are arbitrary. Find never panics, never loops, and never allocates by a
// size the input announces.
func FuzzFind(f *testing.F) {
	if p, err := testprog.BuildE(testprog.Spec{Sources: []string{"hello.c"}, Flags: []string{"-O1"}}); err == nil {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data[:min(len(data), 16384)], []byte{}, seedHeap(), seedAuxv(), uint64(16384), uint64(8192))
		}
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"), []byte("\x7fELF"), seedHeap(), seedAuxv(), uint64(1<<40), uint64(1<<62))
	f.Fuzz(func(t *testing.T, main, vdso, heap, auxv []byte, mainSize, vdsoSize uint64) {
		p := &fuzzProc{
			blobs: map[uint64][]byte{fuzzMainBase: main, fuzzVDSOBase: vdso, fuzzHeapBase: heap},
			auxv:  auxv,
			regions: []target.MemoryRegion{
				{Addr: fuzzMainBase, Size: mainSize % (1 << 48), FileName: "/nonexistent/fuzz-main", Inode: 1, Perm: target.PermRead},
				{Addr: fuzzHeapBase, Size: uint64(len(heap)), FileName: "[heap]"},
				{Addr: fuzzVDSOBase, Size: vdsoSize, FileName: "[vdso]", Perm: target.PermRead},
			},
		}
		mods, _ := Find(p)
		for _, m := range mods {
			if m.VDSO && uint64(len(m.Image)) > maxVDSOImage {
				t.Fatalf("vDSO image of %d bytes", len(m.Image))
			}
		}
	})
}

// seedHeap is an r_debug and a two-entry link_map list, with a name, at
// fuzzHeapBase: what the dynamic section's DT_DEBUG would point to.
func seedHeap() []byte {
	b := make([]byte, 256)
	put := func(off int, v uint64) { binary.LittleEndian.PutUint64(b[off:], v) }
	put(0, 1)                   // r_version
	put(8, fuzzHeapBase+64)     // r_map
	put(64+8, fuzzHeapBase+192) // l_name
	put(64+16, fuzzMainBase)    // l_ld
	put(64+24, fuzzHeapBase+128)
	put(128+24, fuzzHeapBase+64) // a cycle back to the first entry
	copy(b[192:], "/lib/fuzz.so\x00")
	return b
}

func seedAuxv() []byte {
	b := make([]byte, 48)
	binary.LittleEndian.PutUint64(b[0:], atEntry)
	binary.LittleEndian.PutUint64(b[8:], fuzzMainBase+0x1000)
	binary.LittleEndian.PutUint64(b[16:], atSysinfoEHDR)
	binary.LittleEndian.PutUint64(b[24:], fuzzVDSOBase)
	return b
}

// FuzzLinkMap walks r_debug and link_map lists laid out by the fuzzer
// (cycles, long chains, unterminated names): bounded, no panic.
func FuzzLinkMap(f *testing.F) {
	f.Add(seedHeap(), uint64(fuzzHeapBase))
	f.Fuzz(func(t *testing.T, heap []byte, at uint64) {
		p := &fuzzProc{blobs: map[uint64][]byte{fuzzHeapBase: heap}}
		rd, err := ReadRDebug(p, at)
		if err != nil {
			return
		}
		entries, _ := LinkMap(p, rd.Map)
		if len(entries) > maxLinkMapLen {
			t.Fatalf("%d link_map entries", len(entries))
		}
		for _, e := range entries {
			if len(e.Name) > maxPathLen+256 {
				t.Fatalf("name of %d bytes", len(e.Name))
			}
		}
	})
}

// FuzzParseAuxv: any bytes decode into at most maxAuxvEntries keys.
func FuzzParseAuxv(f *testing.F) {
	f.Add(seedAuxv())
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		if m := parseAuxv(b); len(m) > maxAuxvEntries {
			t.Fatalf("%d entries", len(m))
		}
	})
}

// FuzzHeadersFromMemory: ELF and program headers as read from the first
// page of a mapping, whatever its bytes and the mapping's claimed size;
// then the load bias from them against fuzzed mappings.
func FuzzHeadersFromMemory(f *testing.F) {
	if p, err := testprog.BuildE(testprog.Spec{Sources: []string{"hello.c"}, Flags: []string{"-O1"}}); err == nil {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data[:min(len(data), 4096)], uint64(4096), uint64(0x1000))
		}
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"), uint64(1<<63), uint64(1<<63))
	f.Fuzz(func(t *testing.T, page []byte, size, off uint64) {
		p := &fuzzProc{blobs: map[uint64][]byte{fuzzMainBase: page}}
		r := target.MemoryRegion{Addr: fuzzMainBase, Size: size, FileName: "/nonexistent/fuzz"}
		ef, err := headersFromMemory(p, r)
		if err != nil || ef == nil {
			return
		}
		g := []target.MemoryRegion{r, {Addr: fuzzMainBase + size, Size: 4096, Offset: off}}
		loadBias(ef, g)
		for _, ph := range ef.Progs {
			_ = ph.Vaddr
		}
	})
}
