package arch

import (
	"encoding/binary"
	"testing"
)

func image(size int, xcr0 uint64) []byte {
	b := make([]byte, size)
	if size >= XCR0Offset+8 {
		binary.LittleEndian.PutUint64(b[XCR0Offset:], xcr0)
	}
	return b
}

func TestInferXStateLayout(t *testing.T) {
	const avx512 = 0xe7 | 1<<9 // x87 SSE AVX opmask ZMM_Hi256 Hi16_ZMM PKRU
	intel := InferXStateLayout(image(2696, avx512))
	if intel != IntelXState {
		t.Errorf("an Intel-sized image: %v", intel)
	}
	amd := InferXStateLayout(image(2440, avx512))
	want := XStateLayout{2: 576, 5: 832, 6: 896, 7: 1408, 9: 2432}
	if amd != want {
		t.Errorf("an AMD-sized image: %v, want %v", amd, want)
	}
	if l := InferXStateLayout(image(832, 0x7)); l != IntelXState {
		t.Errorf("an AVX-only image: %v (AVX sits at 576 in both)", l)
	}
	if l := InferXStateLayout(image(100, 0)); l != IntelXState {
		t.Errorf("a short image: %v", l)
	}
}

func TestXStateRoundTrip(t *testing.T) {
	amd := XStateLayout{2: 576, 5: 832, 6: 896, 7: 1408, 9: 2432}
	k := image(2440, 0xe7|1<<9)
	for i := XSaveHeader + 64; i < len(k); i++ {
		k[i] = byte(i * 7)
	}
	a := amd.ToArch(k)
	if got := a[XSaveOpmask]; got != k[832] {
		t.Fatalf("k0's first byte %#x, want %#x", got, k[832])
	}
	if got := a[XSaveHi16ZMM+5]; got != k[1408+5] {
		t.Fatalf("zmm16 byte %#x, want %#x", got, k[1413])
	}
	back := amd.FromArch(a, make([]byte, len(k)))
	for c, off := range amd {
		if off == 0 {
			continue
		}
		for i := off; i < off+XComponentSize(c); i++ {
			if back[i] != k[i] {
				t.Fatalf("component %d byte %d: %#x, want %#x", c, i, back[i], k[i])
			}
		}
	}
}
