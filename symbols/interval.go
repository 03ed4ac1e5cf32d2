package symbols

import (
	"cmp"
	"slices"
)

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
// deepest scope), ties going to the span that starts later, then to the
// larger val. For scopes, val is the DIE order: of several functions with
// the same range (assembler aliases such as glibc's __clone3, __GI___clone3
// and clone3) the last one named wins, as in gdb.
type span struct {
	lo, hi uint64
	val    int32
	prio   int32
}

// buildSegments turns possibly overlapping spans into a segmentMap. It
// sweeps the boundaries in order with a max-heap of the spans covering the
// current point (ended spans are dropped lazily when they surface), so it is
// O(n log n) even for pathological, deeply overlapping input.
func buildSegments(spans []span) segmentMap {
	var m segmentMap
	if len(spans) == 0 {
		return m
	}
	// Typed sorts and heap: sort.Slice and container/heap (reflection, an
	// allocation per pushed span) were a fifth of decoding a large C++ unit.
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	ends := make([]uint64, 0, len(spans))
	for _, s := range spans {
		ends = append(ends, s.hi)
	}
	slices.Sort(ends)
	m.start = make([]uint64, 0, len(spans)+1)
	m.val = make([]int32, 0, len(spans)+1)

	active := &spanHeap{}
	next, nextEnd := 0, 0
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
		for next < len(spans) && spans[next].lo == at {
			if spans[next].hi > at {
				active.push(spans[next])
			}
			next++
		}
		for active.Len() > 0 && (*active)[0].hi <= at {
			active.pop()
		}
		best := int32(-1)
		if active.Len() > 0 {
			best = (*active)[0].val
		}
		switch n := len(m.val); {
		case n > 0 && m.val[n-1] == best:
		case n > 0 && m.start[n-1] == at:
			m.val[n-1] = best
		default:
			m.start = append(m.start, at)
			m.val = append(m.val, best)
		}
	}
	m.idx = newAddrIndex(m.start)
	return m
}

// spanHeap orders spans by priority, then by later start, then by larger
// val: the top is the span that wins where spans overlap.
type spanHeap []span

func (h spanHeap) Len() int { return len(h) }

func (h spanHeap) less(i, j int) bool {
	if h[i].prio != h[j].prio {
		return h[i].prio > h[j].prio
	}
	if h[i].lo != h[j].lo {
		return h[i].lo > h[j].lo
	}
	return h[i].val > h[j].val
}

func (h *spanHeap) push(s span) {
	*h = append(*h, s)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a.less(i, p) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *spanHeap) pop() span {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && a.less(r, l) {
			c = r
		}
		if !a.less(c, i) {
			break
		}
		a[i], a[c] = a[c], a[i]
		i = c
	}
	*h = a
	return top
}
