package tls

import (
	"encoding/binary"
	"errors"
	"testing"
)

// image is target memory: bytes at a base address, unreadable elsewhere.
type image struct {
	base uint64
	mem  []byte
}

func (m image) ReadMemory(buf []byte, addr uint64) (int, error) {
	if addr < m.base || addr-m.base >= uint64(len(m.mem)) {
		return 0, errors.New("unmapped")
	}
	return copy(buf, m.mem[addr-m.base:]), nil
}

// FuzzBlock reads TLS blocks out of arbitrary memory (a damaged core, a
// process that overwrote its dynamic linker's data): every lookup ends with
// an address or an error, never a panic or a hang.
func FuzzBlock(f *testing.F) {
	const base = 0x10000
	put := func(b []byte, off int, v uint64) { binary.LittleEndian.PutUint64(b[off:], v) }
	// A consistent image: link_map at 0x000, thread pointer at 0x400 whose
	// dtv (at 0x600, length at 0x5f0) holds module 2's block at 0x800; the
	// slotinfo list at 0x300, pointed to from 0x2f8.
	seed := make([]byte, 0x900)
	put(seed, 0x40, 0x10+0x800)   // l_tls_initimage (bias 0x10 + vaddr)
	put(seed, 0x48, 4)            // filesz
	put(seed, 0x50, 8)            // memsz
	put(seed, 0x58, 8)            // align
	put(seed, 0x68, 0)            // l_tls_offset: dynamic
	put(seed, 0x70, 2)            // l_tls_modid
	put(seed, 0x408, base+0x600)  // tcbhead_t.dtv
	put(seed, 0x5f0, 4)           // dtv[-1].counter
	put(seed, 0x600, 1)           // dtv[0].counter: generation
	put(seed, 0x620, base+0x800)  // dtv[2].pointer.val
	put(seed, 0x2f8, base+0x300)  // _dl_tls_dtv_slotinfo_list
	put(seed, 0x300, 64)          // len
	put(seed, 0x310+2*16, 1)      // slotinfo[2].gen
	put(seed, 0x310+2*16+8, base) // slotinfo[2].map
	f.Add(seed, uint16(0x400), false)
	f.Add(seed, uint16(0x400), true)
	f.Add(make([]byte, 64), uint16(8), false)
	lay := &Layout{LinkMapOffset: 0x68, LinkMapModID: 0x70, DTV: 8, DTVEntry: 16, DTVVal: 0,
		Slotinfo: &Slotinfo{Head: base + 0x2f8, ListLen: 0, ListNext: 8, ListSlots: 16, SlotSize: 16, SlotGen: 0, SlotMap: 8}}
	f.Fuzz(func(t *testing.T, mem []byte, tpOff uint16, scan bool) {
		img := image{base: base, mem: mem}
		m := &Module{Name: "fuzz", LinkMap: base, Bias: 0x10, Segment: Segment{Vaddr: 0x800, Filesz: 4, Memsz: 8, Align: 8}}
		l := lay
		if scan {
			var err error
			if l, err = ScanLayout(img, m); err != nil {
				return
			}
			if l.LinkMapModID >= maxLinkMapScan {
				t.Fatalf("scanned layout outside the scanned bytes: %+v", l)
			}
		}
		tp := base + uint64(tpOff)
		if a, err := Block(img, l, m, tp); err == nil && a == 0 {
			t.Fatal("block at address 0 without an error")
		}
	})
}

// TestSegmentOffset: offsets pass through; link-time addresses inside
// PT_TLS (gcc's split DWARF) become offsets; nothing else is changed.
func TestSegmentOffset(t *testing.T) {
	seg := Segment{Vaddr: 0x3d90, Filesz: 0x10, Memsz: 0x1c, Align: 16}
	for in, want := range map[uint64]uint64{0: 0, 0x18: 0x18, 0x3d90: 0, 0x3da8: 0x18, 0x3dac: 0x3dac, 0x3d8f: 0x3d8f} {
		if got := seg.Offset(in); got != want {
			t.Errorf("Offset(%#x) = %#x, want %#x", in, got, want)
		}
	}
	// A segment starting below its own size is ambiguous: left alone.
	if got := (Segment{Vaddr: 8, Memsz: 64}).Offset(16); got != 16 {
		t.Errorf("ambiguous segment: %#x", got)
	}
}
