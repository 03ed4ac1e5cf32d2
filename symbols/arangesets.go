package symbols

// markArangeSets marks covered the units that have a .debug_aranges set,
// empty or not: a producer that writes .debug_aranges writes every unit's
// code ranges there (GCC writes a set for every unit, an empty one for a
// unit without code), so indexing need not read those units' first DIE
// for ranges: on libc's debug file, 252 data-only units, each needing its
// abbreviation table parsed, were ~6 ms of a first run's index, which
// waits on .debug_info's inflation and is waited on by every lookup. A set
// naming no unit (a damaged section) marks nothing.
func markArangeSets(covered []bool, sets []uint64, byOffset map[uint64]int) {
	for _, off := range sets {
		if i, ok := byOffset[off]; ok {
			covered[i] = true
		}
	}
}
