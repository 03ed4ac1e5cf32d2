package symbols

import (
	"sync"

	"github.com/sondedbg/sonde/symbols/internal/demangler"
)

// demangleCacheMax bounds each demangling cache. A process sees a few
// thousand distinct function names per binary; past the bound a cache
// starts over rather than growing without end.
const demangleCacheMax = 1 << 16

// demangleCache remembers demangled linkage names. Demangling a C++
// template instance costs tens of microseconds (the demangler builds and
// simplifies a tree), far more than finding the frames of an address, and
// the same names come back for every address in a function, in every
// compilation unit that instantiates it, and in every printer. Both
// spellings come from one parse.
var demangleCache struct {
	mu sync.Mutex
	m  map[string]demangleResult
}

type demangleResult struct {
	full, display string
	ok            bool
}

func demangled(linkage string) demangleResult {
	c := &demangleCache
	c.mu.Lock()
	r, hit := c.m[linkage]
	c.mu.Unlock()
	if hit {
		return r
	}
	r.full, r.display, r.ok = demangler.Both(linkage)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= demangleCacheMax {
		c.m = make(map[string]demangleResult)
	}
	c.m[linkage] = r
	c.mu.Unlock()
	return r
}

// DemangleLinkageName demangles a C++ or Rust linkage name as binutils
// does (addr2line -C, c++filt): return types of template functions and
// parameter lists included. ok is false when the demangler refuses the
// name (it is not mangled, or malformed); name is then "". Results are
// cached.
func DemangleLinkageName(linkage string) (name string, ok bool) {
	r := demangled(linkage)
	return r.full, r.ok
}
