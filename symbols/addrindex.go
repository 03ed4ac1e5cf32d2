package symbols

// addrIndex finds, in a sorted slice of addresses, the last one <= pc. A
// sparse copy of every 32nd key (small enough to stay in cache) narrows the
// search to one 256-byte window of the dense keys, so a lookup touches few
// cache lines even when the keys are megabytes: warm lookups are bound by
// memory latency, not by instruction count.
type addrIndex struct {
	keys   []uint64
	sparse []uint64 // keys[0], keys[32], keys[64], ...
}

const addrIndexStride = 32

func newAddrIndex(keys []uint64) addrIndex {
	x := addrIndex{keys: keys}
	if len(keys) > addrIndexStride {
		x.sparse = make([]uint64, 0, len(keys)/addrIndexStride+1)
		for i := 0; i < len(keys); i += addrIndexStride {
			x.sparse = append(x.sparse, keys[i])
		}
	}
	return x
}

// floor returns the index of the last key <= pc, or -1.
func (x *addrIndex) floor(pc uint64) int {
	lo, hi := 0, len(x.keys) // search window [lo, hi)
	if x.sparse != nil {
		j := upper(x.sparse, pc) - 1
		if j < 0 {
			return -1
		}
		lo = j * addrIndexStride
		hi = min(lo+addrIndexStride, len(x.keys))
	}
	return lo + upper(x.keys[lo:hi], pc) - 1
}

// upper returns the number of keys <= pc (keys sorted).
func upper(keys []uint64, pc uint64) int {
	lo, hi := 0, len(keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if keys[m] <= pc {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
