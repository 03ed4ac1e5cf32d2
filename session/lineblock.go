package session

import "github.com/sondedbg/sonde/symbols"

// lineBlock asks the symbol file for the line block at a link-time address.
func lineBlock(b *symbols.Binary, pc uint64) (lo, hi uint64, ok bool) {
	return 0, 0, false
}
