package dwarf

// MaxOriginHops bounds the DW_AT_abstract_origin and DW_AT_specification
// links followed from one DIE. Real chains are short (a concrete inlined
// instance names its abstract instance, which names the in-class
// declaration it defines: two links); a cycle in bad input ends here.
const MaxOriginHops = 8

// FollowOrigins walks from start along the DIEs' DW_AT_abstract_origin or
// DW_AT_specification links (what a DIE does not say itself, the DIE it
// completes may): found is called on each DIE of the chain, start first,
// and the walk stops at the first for which it returns true, returning
// that DIE, the links followed to reach it (counted on from hops) and
// true. next returns the DIE a DIE's link leads to, false when it has
// none or that DIE cannot be read; the walk then returns the last DIE
// reached and false. It follows links while hops < MaxOriginHops.
//
// D is the caller's view of a DIE (symbols keeps a compact record per DIE,
// variables a decoded entry); the chain and its bound are the same for
// both.
func FollowOrigins[D any](start D, hops int, next func(D) (D, bool), found func(D) bool) (last D, hopsTaken int, ok bool) {
	d := start
	for {
		if found(d) {
			return d, hops, true
		}
		if hops >= MaxOriginHops {
			return d, hops, false
		}
		n, more := next(d)
		if !more {
			return d, hops, false
		}
		d, hops = n, hops+1
	}
}
