package unwind

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/sondedbg/sonde/unwind/cfi"
)

// rowCacheSize is the number of decoded rows a module keeps, two-way
// set-associative by pc. Warm walks revisit the same return addresses, so
// exact-pc keys hit.
const rowCacheSize = 1024

// moduleState is the engine's per-module data: the CFI tables, built on first
// use, and a lock-free cache of decoded rows. Entries are immutable once
// published; a miss decodes a row and publishes a new entry, so concurrent
// walks over one module never block each other.
type moduleState struct {
	once  sync.Once
	eh    *cfi.Table
	debug *cfi.Table
	rows  [rowCacheSize]atomic.Pointer[cachedRow]
}

type cachedRow struct {
	pc  uint64 // link-time lookup pc this entry answers
	row cfi.Row
	err error // negative entries: no FDE (nil row) or a CFI error
	ok  bool
}

func (m *Module) tables() *moduleState {
	s := &m.state
	s.once.Do(func() {
		if len(m.EHFrame.Data) > 0 {
			s.eh = cfi.NewEHFrame(m.EHFrame.Data, cfi.Options{
				Addr: m.EHFrame.Addr, Hdr: m.EHFrameHdr.Data, HdrAddr: m.EHFrameHdr.Addr,
			})
		}
		if len(m.DebugFrame.Data) > 0 {
			s.debug = cfi.NewDebugFrame(m.DebugFrame.Data, cfi.Options{Addr: m.DebugFrame.Addr})
		}
	})
	return s
}

// rowSet returns the index of the first of the two slots pc may occupy.
func rowSet(pc uint64) uint64 {
	// Fibonacci hashing spreads nearby return addresses over the table.
	return (pc * 0x9e3779b97f4a7c15) >> (64 - 10) &^ 1
}

// row returns the CFI row for the runtime pc, or (nil, nil) when neither
// table has an FDE for it. The returned row must not be modified.
func (m *Module) row(pc uint64) (*cfi.Row, error) {
	lpc := pc - m.Bias
	s := m.tables()
	set := rowSet(lpc)
	for i := set; i < set+2; i++ {
		if e := s.rows[i].Load(); e != nil && e.pc == lpc {
			if e.ok {
				return &e.row, nil
			}
			return nil, e.err
		}
	}
	e := &cachedRow{pc: lpc}
	err := errNoFDE
	if s.eh != nil {
		err = s.eh.RowFor(lpc, &e.row)
	}
	if err != nil && s.debug != nil {
		// .debug_frame also answers when .eh_frame is damaged.
		if err2 := s.debug.RowFor(lpc, &e.row); err2 == nil || errors.Is(err, cfi.ErrNoFDE) {
			err = err2
		}
	}
	switch {
	case err == nil:
		e.ok = true
	case errors.Is(err, cfi.ErrNoFDE):
		e.err = nil
	default:
		e.err = err
	}
	// The newest entry takes the first slot and the previous one moves to the
	// second: least recently inserted goes. Races only lose a cache entry.
	s.rows[set+1].Store(s.rows[set].Load())
	s.rows[set].Store(e)
	if e.ok {
		return &e.row, nil
	}
	return nil, e.err
}

var errNoFDE = cfi.ErrNoFDE
