package ptrace

import (
	"encoding/binary"
	"sync"

	"github.com/sondedbg/sonde/arch"
)

// The kernel hands out the XSAVE area in this CPU's standard layout, which
// differs between vendors (see arch.XStateLayout); the backend moves the
// components into arch's layout on reads and back on writes, with the offsets
// CPUID leaf 0xD gives.

func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// cpuLayout is this CPU's XSAVE layout.
var cpuLayout = sync.OnceValue(func() arch.XStateLayout {
	var l arch.XStateLayout
	for c := 2; c < len(l); c++ {
		size, off, _, _ := cpuid(0xd, uint32(c))
		if size != 0 && int(size) == arch.XComponentSize(c) {
			l[c] = int(off)
		}
	}
	return l
})

// toArchXState converts the kernel's XSAVE image into arch's layout.
func toArchXState(k []byte) []byte { return cpuLayout().ToArch(k) }

// fromArchXState writes an arch-layout image a over the kernel image k (which
// keeps components arch does not describe) and returns k.
func fromArchXState(a, k []byte) []byte {
	k = cpuLayout().FromArch(a, k)
	if len(k) < arch.XSaveHeader+8 {
		return k // no XSAVE header: an FXSAVE-sized image has nothing to mark
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
