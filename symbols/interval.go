package symbols

import "sort"

// segmentMap maps addresses to small integers through sorted, disjoint
// segments: segment i covers [start[i], start[i+1]) and maps to val[i]; -1
// marks a gap. Lookups are one binary search with no allocation.
type segmentMap struct {
	start []uint64
	val   []int32
	idx   addrIndex
}

func (m *segmentMap) find(pc uint64) int32 {
	i := m.idx.floor(pc)
	if i < 0 {
		return -1
	}
	return m.val[i]
}

// span is an input to buildSegments: [lo, hi) maps to val at priority prio;
// where spans overlap the highest priority wins (for scope trees: the
// deepest scope), ties going to the span that starts later.
type span struct {
	lo, hi uint64
	val    int32
	prio   int32
}

// buildSegments turns possibly overlapping spans into a segmentMap.
func buildSegments(spans []span) segmentMap {
	var m segmentMap
	if len(spans) == 0 {
		return m
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].lo != spans[j].lo {
			return spans[i].lo < spans[j].lo
		}
		return spans[i].prio < spans[j].prio
	})
	ends := make([]uint64, 0, len(spans))
	for _, s := range spans {
		ends = append(ends, s.hi)
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })

	var active []span // spans covering the current point
	next, nextEnd := 0, 0
	emit := func(at uint64) {
		best := int32(-1)
		bestPrio := int32(-1 << 31)
		var bestLo uint64
		for _, a := range active {
			if a.prio > bestPrio || (a.prio == bestPrio && a.lo >= bestLo) {
				best, bestPrio, bestLo = a.val, a.prio, a.lo
			}
		}
		if n := len(m.val); n > 0 && m.val[n-1] == best {
			return
		}
		if n := len(m.start); n > 0 && m.start[n-1] == at {
			m.val[n-1] = best
			if n > 1 && m.val[n-2] == best {
				m.start, m.val = m.start[:n-1], m.val[:n-1]
			}
			return
		}
		m.start = append(m.start, at)
		m.val = append(m.val, best)
	}
	for next < len(spans) || nextEnd < len(ends) {
		// The next boundary is the smaller of the next start and the next end.
		var at uint64
		if next < len(spans) && (nextEnd >= len(ends) || spans[next].lo <= ends[nextEnd]) {
			at = spans[next].lo
		} else {
			at = ends[nextEnd]
		}
		for nextEnd < len(ends) && ends[nextEnd] == at {
			nextEnd++
		}
		// Drop spans that have ended, add spans starting here.
		w := 0
		for _, a := range active {
			if a.hi > at {
				active[w] = a
				w++
			}
		}
		active = active[:w]
		for next < len(spans) && spans[next].lo == at {
			if spans[next].hi > at {
				active = append(active, spans[next])
			}
			next++
		}
		emit(at)
	}
	m.idx = newAddrIndex(m.start)
	return m
}
