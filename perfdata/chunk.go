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
	c := &Chunk{buf: make([]byte, 0, size), pool: p}
	c.refs.Store(1)
	return c
}

func (p *chunkPool) put(c *Chunk) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < 64 {
		p.free = append(p.free, c)
	}
}

// chunkHeadroom is the room before a chunk's bytes for the start of the
// record the previous chunk ends in (records are at most 64 KiB).
const chunkHeadroom = 64 << 10

// A goroutine reads the chunks ahead of the records being decoded, so the
// kernel's copy of the file into memory (most of a reader's work) runs on
// another core than the decoding.
type fetched struct {
	c   *Chunk
	off int64 // where in the input the chunk's bytes (after the headroom) start
	n   int
	err error
}

// startFetch starts reading the input ahead from off.
func (r *Reader) startFetch(off int64) {
	out, stop := make(chan fetched, 2), make(chan struct{})
	r.fetch, r.stopFetch = out, stop
	size := int64(chunkSize)
	go func(ra io.ReaderAt, off, end int64, pool *chunkPool) {
		defer close(out)
		for off < end {
			select {
			case <-stop:
				return
			default:
			}
			want := min(size, end-off)
			c := pool.get(chunkHeadroom + int(size))
			c.buf = c.buf[:chunkHeadroom+int(want)]
			n, err := ra.ReadAt(c.buf[chunkHeadroom:], off)
			if int64(n) == want {
				err = nil
			} else if err == nil {
				err = io.ErrUnexpectedEOF
			}
			select {
			case out <- fetched{c, off, n, err}:
			case <-stop:
				c.Release()
				return
			}
			if err != nil {
				return
			}
			off += want
		}
	}(r.ra, off, r.end, r.pool)
}

// stopFetching ends the read-ahead and releases what it read.
func (r *Reader) stopFetching() {
	if r.fetch == nil {
		return
	}
	close(r.stopFetch)
	for f := range r.fetch {
		f.c.Release()
	}
	r.fetch = nil
}

// refill makes r.mem hold at least need bytes from r.pos on (fewer at the
// end of the input): the next chunk read ahead, preceded in its headroom by
// what is left of the current one.
func (r *Reader) refill(need int64) error {
	if r.fetch == nil {
		r.startFetch(r.memOff + int64(len(r.mem)))
	}
	var left []byte // the start of the record being read
	if at := r.pos - r.memOff; at >= 0 && at < int64(len(r.mem)) {
		left = r.mem[at:]
	}
	for {
		f, ok := <-r.fetch
		if !ok {
			return io.ErrUnexpectedEOF
		}
		if len(left) == 0 && f.off+int64(f.n) <= r.pos && f.err == nil {
			f.c.Release() // skipped (AUXTRACE data)
			continue
		}
		start := chunkHeadroom - len(left)
		if len(left) > 0 {
			copy(f.c.buf[start:], left) // left ends where f starts
		} else {
			start = chunkHeadroom + int(max(r.pos-f.off, 0))
			start = min(start, chunkHeadroom+f.n)
		}
		if r.chunk != nil {
			r.chunk.Release()
		}
		r.chunk, r.mem, r.memOff = f.c, f.c.buf[start:chunkHeadroom+f.n], r.pos
		if int64(len(r.mem)) < min(need, r.end-r.pos) {
			if f.err != nil {
				return noEOF(f.err)
			}
			return io.ErrUnexpectedEOF
		}
		return nil
	}
}
