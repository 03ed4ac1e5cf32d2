package dwarf

import "testing"

// TestFollowOrigins walks chains of DIEs given as a map from a DIE to the
// one its link names: found stops the walk, a missing link ends it, and a
// cycle ends at MaxOriginHops.
func TestFollowOrigins(t *testing.T) {
	links := map[int]int{1: 2, 2: 3, 10: 11, 11: 10}
	next := func(d int) (int, bool) { n, ok := links[d]; return n, ok }
	if d, hops, ok := FollowOrigins(1, 0, next, func(d int) bool { return d == 3 }); d != 3 || hops != 2 || !ok {
		t.Errorf("1→3: %d %d %v", d, hops, ok)
	}
	if d, hops, ok := FollowOrigins(1, 0, next, func(d int) bool { return d == 4 }); d != 3 || hops != 2 || ok {
		t.Errorf("1→end: %d %d %v", d, hops, ok)
	}
	visited := 0
	if _, hops, ok := FollowOrigins(10, 0, next, func(int) bool { visited++; return false }); hops != MaxOriginHops || ok || visited != MaxOriginHops+1 {
		t.Errorf("cycle: %d hops, %v, %d visited", hops, ok, visited)
	}
	if _, hops, _ := FollowOrigins(10, MaxOriginHops-1, next, func(int) bool { return false }); hops != MaxOriginHops {
		t.Errorf("cycle from hop %d: %d hops", MaxOriginHops-1, hops)
	}
}
