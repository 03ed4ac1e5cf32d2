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

// Tables are the CFI of one ELF image: its tables, built on first use, and
// a lock-free cache of decoded rows, keyed by link-time pc. Entries are
// immutable once published; a miss decodes a row and publishes a new
// entry, so concurrent walks over one module never block each other.
// Everything in them follows from the image's sections, so the modules of
// one file in any process (and the same module after its process's list
// was read again) may share them (Module.SetTables), and a front end may
// build them, and decode the rows it knows a walk will need, before the
// first walk (Prepare).
type Tables struct {
	src   Sources
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

// NewTables returns the (not yet built) tables of an image's sections.
func NewTables(s Sources) *Tables { return &Tables{src: s} }

// Prepare builds the tables and decodes the rows at the link-time pcs
// lpcs into the cache (a pc without an FDE caches that), so that a first
// walk through them finds them decoded and their pages read.
func (t *Tables) Prepare(lpcs ...uint64) {
	t.build()
	for _, pc := range lpcs {
		t.row(pc)
	}
}

func (t *Tables) build() *Tables {
	t.once.Do(func() {
		s := t.src
		if len(s.EHFrame.Data) > 0 {
			t.eh = cfi.NewEHFrame(s.EHFrame.Data, cfi.Options{
				Addr: s.EHFrame.Addr, Hdr: s.EHFrameHdr.Data, HdrAddr: s.EHFrameHdr.Addr,
			})
		}
		if len(s.DebugFrame.Data) > 0 {
			t.debug = cfi.NewDebugFrame(s.DebugFrame.Data, cfi.Options{Addr: s.DebugFrame.Addr})
		}
	})
	return t
}

// tables returns m's Tables: the shared ones SetTables installed, or its
// own, made from its sections on first use.
func (m *Module) tables() *Tables {
	if m.shared != nil {
		return m.shared.build()
	}
	m.ownOnce.Do(func() { m.own = NewTables(Sources{m.EHFrameHdr, m.EHFrame, m.DebugFrame}) })
	return m.own.build()
}

// rowSet returns the index of the first of the two slots pc may occupy.
func rowSet(pc uint64) uint64 {
	// Fibonacci hashing spreads nearby return addresses over the table.
	return (pc * 0x9e3779b97f4a7c15) >> (64 - 10) &^ 1
}

// row returns the CFI row for the runtime pc, or (nil, nil) when neither
// table has an FDE for it. The returned row must not be modified.
func (m *Module) row(pc uint64) (*cfi.Row, error) {
	return m.tables().row(pc - m.Bias)
}

// row returns the CFI row for the link-time pc lpc (Module.row).
func (t *Tables) row(lpc uint64) (*cfi.Row, error) {
	s := t
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
