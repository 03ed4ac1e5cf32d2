package profiling

import (
	"math/rand"
	"testing"

	"github.com/sondedbg/sonde/perfdata"
	"github.com/sondedbg/sonde/unwind"
)

// TestUserRegistersMatchReg checks userRegisters' walk over the mask's bits
// against asking Sample.Reg register by register, on random masks (short
// register arrays included, as a damaged record may have).
func TestUserRegistersMatchReg(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for n := 0; n < 20000; n++ {
		s := perfdata.Sample{RegsABI: 2, RegsMask: rng.Uint64()}
		switch n % 3 {
		case 0:
			s.RegsMask &= 1<<24 - 1
		case 1:
			s.RegsMask = 0xff0fff // perf's x86-64 user set without ds, es, fs, gs
		}
		k := rng.Intn(70)
		for i := 0; i < k; i++ {
			s.Regs = append(s.Regs, rng.Uint64())
		}
		var got, want unwind.Registers
		gotOK := userRegisters(&s, &got)
		for reg, dw := range perfToDWARF {
			if v, ok := s.Reg(reg); ok && dw >= 0 && (reg < 12 || reg > 15) {
				want.Set(dw, v)
			}
		}
		_, okIP := want.Get(16)
		_, okSP := want.Get(7)
		if got != want || gotOK != (okIP && okSP) {
			t.Fatalf("mask %#x, %d values: got %+v %v, want %+v %v", s.RegsMask, len(s.Regs), got, gotOK, want, okIP && okSP)
		}
	}
}
