package tcf

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Budget bounds bytes that several channels hold together (the input they
// buffer, or the output queued for them): each channel is bounded on its
// own too, but hundreds of channels each within its bound can still add up
// to gigabytes. A channel that cannot get its share is closed, with the
// reason in the log; the others go on.
type Budget struct {
	limit int64
	used  atomic.Int64
	peak  atomic.Int64
}

// NewBudget returns a budget of limit bytes (<= 0: unlimited).
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// Take charges n bytes; false (and nothing charged) if that would exceed
// the limit.
func (b *Budget) Take(n int) bool {
	for {
		u := b.used.Load()
		if b.limit > 0 && u+int64(n) > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+int64(n)) {
			if p := b.peak.Load(); u+int64(n) > p {
				b.peak.CompareAndSwap(p, u+int64(n))
			}
			return true
		}
	}
}

// TakeUpTo charges n bytes unless that would exceed hard (a ceiling above
// the limit, for a charge the caller allows over it).
func (b *Budget) TakeUpTo(n int, hard int64) bool {
	for {
		u := b.used.Load()
		if u+int64(n) > hard {
			return false
		}
		if b.used.CompareAndSwap(u, u+int64(n)) {
			if p := b.peak.Load(); u+int64(n) > p {
				b.peak.CompareAndSwap(p, u+int64(n))
			}
			return true
		}
	}
}

// Give refunds n bytes.
func (b *Budget) Give(n int) { b.used.Add(-int64(n)) }

// Used is the bytes charged now.
func (b *Budget) Used() int64 { return b.used.Load() }

// Peak is the most bytes charged at once (approximately, under races).
func (b *Budget) Peak() int64 { return b.peak.Load() }

// Limit is the budget's limit (<= 0: unlimited).
func (b *Budget) Limit() int64 { return b.limit }

// Agent-wide defaults (Config.MaxBufferedInput, Config.MaxQueuedOutput).
// Together with the garbage collector's overhead they keep the agent's
// memory well under 300 MB whatever its peers send or fail to read; one
// channel still gets its own bound (DefaultMaxMessageSize,
// DefaultMaxQueueBytes) when the others are idle.
const (
	DefaultMaxBufferedInput = 64 << 20
	DefaultMaxQueuedOutput  = 64 << 20
)

// memReturner gives memory back to the operating system after a channel
// that held a lot of it closed: Go's background scavenger returns freed
// heap slowly (minutes for hundreds of megabytes), and an agent that
// survived an attack should not keep the attack's footprint.
type memReturner struct {
	mu      sync.Mutex
	pending bool
	last    time.Time
}

// returnEvery bounds how often the agent forces memory back (a forced
// collection costs a few milliseconds of CPU).
const returnEvery = 2 * time.Second

// bigChannel is what a channel must have held at its peak for its closing
// to give memory back.
const bigChannel = 8 << 20

func (m *memReturner) schedule() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending {
		return
	}
	m.pending = true
	wait := max(returnEvery-time.Since(m.last), 100*time.Millisecond)
	time.AfterFunc(wait, func() {
		// A channel that closes from now on schedules another return: what
		// it frees may come after this collection has looked.
		m.mu.Lock()
		m.pending, m.last = false, time.Now()
		m.mu.Unlock()
		// Two collections: the first moves the buffers pooled by the
		// closed channels (largeBufs holds up to 16 MiB each) to the
		// pools' victim caches, the second frees them, and FreeOSMemory
		// returns the freed pages. With one, an agent kept what its pools
		// held when the attack ended (16-44 MiB over its start in
		// TestAgentMemoryUnderAttack), until the scavenger's slow pace.
		runtime.GC()
		debug.FreeOSMemory()
	})
}
