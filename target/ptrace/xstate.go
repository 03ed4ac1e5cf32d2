package ptrace

import (
	"encoding/binary"
	"sync"

	"github.com/sondedbg/sonde/arch"
)

// The kernel hands out the XSAVE area in the standard (non-compacted) format,
// where each state component sits at the offset CPUID leaf 0xD gives for this
// CPU. Those offsets differ between vendors: AMD CPUs have no MPX components,
// so AVX-512's opmask, ZMM_Hi256 and Hi16_ZMM sit 256 bytes lower than on
// Intel. Package arch describes the Intel layout, so the backend converts: reads
// are moved into arch's layout, writes back into the CPU's.

func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// archComponentOffset is where arch's layout keeps each extended component.
var archComponentOffset = map[int]int{
	2: arch.XSaveYMMHi, 3: 960, 4: 1024, 5: arch.XSaveOpmask, 6: arch.XSaveZMMHi256, 7: arch.XSaveHi16ZMM, 9: 2688,
}

// archXStateSize is the size of an XSAVE area in arch's layout (through PKRU).
const archXStateSize = 2696

type xcomponent struct{ cpuOff, archOff, size int }

var xlayout = sync.OnceValue(func() []xcomponent {
	var out []xcomponent
	for c := 2; c <= 9; c++ {
		size, off, _, _ := cpuid(0xd, uint32(c))
		archOff, ok := archComponentOffset[c]
		if size == 0 || !ok {
			continue
		}
		out = append(out, xcomponent{int(off), archOff, int(size)})
	}
	return out
})

// toArchXState converts the kernel's XSAVE image into arch's layout.
func toArchXState(k []byte) []byte {
	a := make([]byte, max(archXStateSize, len(k)))
	n := min(len(k), arch.XSaveHeader+64)
	copy(a, k[:n]) // legacy area and header are the same everywhere
	for _, c := range xlayout() {
		if c.cpuOff+c.size <= len(k) && c.archOff+c.size <= len(a) {
			copy(a[c.archOff:c.archOff+c.size], k[c.cpuOff:c.cpuOff+c.size])
		}
	}
	return a
}

// fromArchXState writes an arch-layout image a over the kernel image k (which
// keeps components arch does not describe) and returns k.
func fromArchXState(a, k []byte) []byte {
	n := min(len(k), arch.XSaveHeader+64)
	copy(k[:n], a[:n])
	for _, c := range xlayout() {
		if c.cpuOff+c.size <= len(k) && c.archOff+c.size <= len(a) {
			copy(k[c.cpuOff:c.cpuOff+c.size], a[c.archOff:c.archOff+c.size])
		}
	}
	// A register written while its component was in its init state needs the
	// component marked in use, or XRSTOR would load the init value instead.
	// Marking every enabled component is safe: the kernel filled the image of
	// components in init state with their init values.
	bv := binary.LittleEndian.Uint64(k[arch.XSaveHeader:])
	xcr0 := binary.LittleEndian.Uint64(k[arch.XCR0Offset:])
	binary.LittleEndian.PutUint64(k[arch.XSaveHeader:], bv|xcr0)
	return k
}
