package ptrace

import (
	"encoding/binary"
	"testing"

	"github.com/sondedbg/sonde/arch"
)

// FuzzXState converts XSAVE images of any size and contents between the
// kernel's layout (this CPU's, and the one inferred for a core from
// another machine) and arch's, both ways: no panic, and the conversions
// keep their sizes (arch's image is at least arch.XStateSize; writing back
// returns the kernel image's own length).
func FuzzXState(f *testing.F) {
	full := make([]byte, arch.XStateSize)
	binary.LittleEndian.PutUint64(full[arch.XCR0Offset:], 0x2e7) // x87 SSE AVX opmask ZMM
	binary.LittleEndian.PutUint64(full[arch.XSaveHeader:], 0x7)
	f.Add(full, full[:arch.XStateSize/2])
	f.Add(full[:arch.FXSaveSize], full[:arch.FXSaveSize]) // FXSAVE only: no header
	f.Add([]byte{}, []byte{1})
	packed := make([]byte, arch.XSaveYMMHi+256+64)
	binary.LittleEndian.PutUint64(packed[arch.XCR0Offset:], 0x7|1<<9) // AVX and PKRU, packed
	f.Add(packed, full)
	f.Fuzz(func(t *testing.T, k, a []byte) {
		for _, l := range []arch.XStateLayout{cpuLayout(), arch.InferXStateLayout(k), arch.IntelXState} {
			out := l.ToArch(k)
			if len(out) < arch.XStateSize || len(out) < len(k) {
				t.Fatalf("ToArch of %d bytes gave %d", len(k), len(out))
			}
			back := l.FromArch(a, append([]byte(nil), k...))
			if len(back) != len(k) {
				t.Fatalf("FromArch changed the image's size: %d -> %d", len(k), len(back))
			}
		}
		if out := toArchXState(k); len(out) < arch.XStateSize {
			t.Fatalf("toArchXState gave %d bytes", len(out))
		}
		if back := fromArchXState(a, append([]byte(nil), k...)); len(back) != len(k) {
			t.Fatalf("fromArchXState changed the image's size: %d -> %d", len(k), len(back))
		}
	})
}
