package symbols

import (
	"math/rand"
	"testing"
)

// naiveInnermost is the definition buildSegments implements.
func naiveInnermost(spans []span, pc uint64) int32 {
	best, bestPrio, bestLo := int32(-1), int32(-1<<31), uint64(0)
	for _, s := range spans {
		if pc >= s.lo && pc < s.hi && (s.prio > bestPrio || (s.prio == bestPrio && (s.lo > bestLo || (s.lo == bestLo && s.val > best)))) {
			best, bestPrio, bestLo = s.val, s.prio, s.lo
		}
	}
	return best
}

func TestSegmentsMatchNaive(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for round := 0; round < 200; round++ {
		var spans []span
		for i := 0; i < 1+r.Intn(30); i++ {
			lo := uint64(r.Intn(200))
			spans = append(spans, span{lo, lo + uint64(1+r.Intn(60)), int32(i), int32(r.Intn(4))})
		}
		orig := append([]span(nil), spans...)
		m := buildSegments(spans)
		for pc := uint64(0); pc < 300; pc++ {
			if got, want := m.find(pc), naiveInnermost(orig, pc); got != want {
				t.Fatalf("round %d pc %d: %d, want %d (spans %v)", round, pc, got, want, orig)
			}
		}
	}
}

// TestSegmentsPathological: deeply nested spans (as corrupt input can have)
// are handled in n log n.
func TestSegmentsPathological(t *testing.T) {
	const n = 200000
	spans := make([]span, n)
	for i := range spans {
		spans[i] = span{uint64(i), uint64(2*n - i), int32(i), int32(i)}
	}
	m := buildSegments(spans)
	if got := m.find(n - 1); got != n-1 {
		t.Fatalf("innermost at %d: %d", n-1, got)
	}
}
