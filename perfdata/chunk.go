package perfdata

import (
	"io"
	"sync"
	"sync/atomic"
)

// A file-mode Reader reads the data section in chunks of a few MiB and
// decodes records where they lie in a chunk, so a record's bytes (a
// sample's 8 KiB stack copy) are read into memory once and never copied.
// A chunk stays in use while anyone holds a reference: the Reader while it
// reads from it, a Sorter for the records it holds back, a caller that
// retained a record. When the last reference goes the chunk is reused, so
// a recording of any size costs the chunks its pending records span.

// chunkSize is how much of the input one read takes (a variable for the
// tests, which make chunk boundaries frequent).
var chunkSize = 1 << 20

// Chunk is a stretch of the input held in memory; Record.Chunk names the
// one a record lies in.
type Chunk struct {
	buf  []byte
	refs atomic.Int32
	pool *chunkPool
}

// Retain keeps the chunk (and so the Body and Stack of every record in it)
// valid until a matching Release, from any goroutine.
func (c *Chunk) Retain() { c.refs.Add(1) }

// Release drops a reference taken by Retain.
func (c *Chunk) Release() {
	if n := c.refs.Add(-1); n == 0 {
		c.pool.put(c)
	} else if n < 0 {
		panic("perfdata: Chunk released more often than retained")
	}
}

// chunkPool keeps chunks nobody uses, for the next reads.
type chunkPool struct {
	mu   sync.Mutex
	free []*Chunk
}

func (p *chunkPool) get(size int) *Chunk {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.free) - 1; i >= 0; i-- {
		if c := p.free[i]; cap(c.buf) >= size {
			p.free[i] = p.free[len(p.free)-1]
			p.free = p.free[:len(p.free)-1]
			c.refs.Store(1)
			return c
		}
	}
	c := &Chunk{buf: make([]byte, 0, max(size, chunkSize)), pool: p}
	c.refs.Store(1)
	return c
}

func (p *chunkPool) put(c *Chunk) {
	if cap(c.buf) > chunkSize {
		return // an oversized chunk for one big record: let it go
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < 64 {
		p.free = append(p.free, c)
	}
}

// refill makes r.mem hold at least need bytes from r.pos on (fewer at the
// end of the input): a new chunk starting with what is left of the current
// one, then as much of the input as fits.
func (r *Reader) refill(need int64) error {
	var left []byte // the start of the record being read
	if at := r.pos - r.memOff; at >= 0 && at < int64(len(r.mem)) {
		left = r.mem[at:]
	}
	want := min(max(need, int64(chunkSize)), r.end-r.pos)
	c := r.pool.get(int(want))
	c.buf = append(c.buf[:0], left...)
	n, err := r.ra.ReadAt(c.buf[len(left):want], r.pos+int64(len(left)))
	c.buf = c.buf[:len(left)+n]
	if n < int(want)-len(left) && err == nil {
		err = io.ErrUnexpectedEOF
	}
	if r.chunk != nil {
		r.chunk.Release()
	}
	r.chunk, r.mem, r.memOff = c, c.buf, r.pos
	if int64(len(c.buf)) < min(need, r.end-r.pos) {
		return noEOF(err)
	}
	return nil
}
