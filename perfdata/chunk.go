package perfdata

import (
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

// A file-mode Reader reads the data section in chunks of 512 KiB and
// decodes records where they lie in a chunk, so a record's bytes (a
// sample's 8 KiB stack copy) are read into memory once and never copied.
// A chunk stays in use while anyone holds a reference: the Reader while it
// reads from it, a Sorter for the records it holds back, a caller that
// retained a record. When the last reference goes the chunk is reused, so
// a recording of any size costs the chunks its pending records span.

// chunkSize is how much of the input one read takes (a variable for the
// tests, which make chunk boundaries frequent). 512 KiB rather than 256:
// half the reads, hand-overs and wake-ups of the reading goroutine, for
// ~1 MiB more in flight (on a 1 GB recording at real-time priority, with
// four reads ahead: -3% wall, -2% CPU, ~350 more page faults).
var chunkSize = 512 << 10

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
		c.pool.held.Add(-1)
		c.pool.put(c)
	} else if n < 0 {
		panic("perfdata: Chunk released more often than retained")
	}
}

// maxFree bounds the bytes of the chunks kept for reuse: a recording whose
// rounds span more holds them while they are in use, then lets them go.
const maxFree = 64 << 20

// chunkPool keeps chunks nobody uses, for the next reads.
type chunkPool struct {
	mu   sync.Mutex
	free []*Chunk
	held atomic.Int64 // chunks handed out and not yet released to the pool
}

func (p *chunkPool) get(size int) *Chunk {
	p.held.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.free) - 1; i >= 0; i-- {
		if c := p.free[i]; cap(c.buf) >= size {
			c.buf = c.buf[:cap(c.buf)]
			p.free[i] = p.free[len(p.free)-1]
			p.free = p.free[:len(p.free)-1]
			c.refs.Store(1)
			return c
		}
	}
	c := &Chunk{buf: make([]byte, max(size, headroom+chunkSize)), pool: p}
	c.refs.Store(1)
	return c
}

func (p *chunkPool) put(c *Chunk) {
	if cap(c.buf) > headroom+chunkSize {
		return // an oversized chunk for one big record: let it go
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free)*chunkSize < maxFree {
		p.free = append(p.free, c)
	}
}

// ChunksHeld reports how many of a file-mode Reader's chunks are still
// retained by someone: the Reader's current one, its reads ahead, records a
// Sorter or a caller keeps. Once every record went out and was let go it is
// at most two (the Reader's and the Sorter's last); more means a Retain
// without its Release. For tests and diagnostics.
func (r *Reader) ChunksHeld() int {
	if r.pool == nil {
		return 0
	}
	return int(r.pool.held.Load())
}

// headroom is the space kept free before a chunk's input bytes: the start
// of a record that runs past the previous chunk's end is copied there, so
// the record lies in one piece (a record is at most 64 KiB: its size is 16
// bits). A read-ahead chunk's bytes are read before anyone knows where the
// records in it begin.
const headroom = 1 << 16

// readAhead is how many chunks a file-mode Reader asks for ahead of the one
// it decodes: their reads run on other cores while this one decodes, so the
// copy out of the page cache (the biggest share of reading a recording) is
// off the reading goroutine's path. 0 reads each chunk when it is needed.
// Four rather than two: the reading goroutine sleeps less often on an
// empty queue, and the decoding one less often on a read not yet done
// (each sleep and wake-up is a futex call and, on a VM, an IPI to the
// other vCPU): on a 1 GB recording at real-time priority, 8% less wall
// and CPU time for ~200 more page faults (the chunks in flight). Eight
// rather than four once the workers got faster (session 20): the reading
// goroutine, the slowest stage, idles less at the start, while the
// first samples load their modules (1 GB, real-time priority: 4% less wall
// and 3% less CPU; 16 gained nothing more, 32 cost 1,700 more faults).
var readAhead = 8

// SetReadAhead sets how many chunks of the file the Reader reads ahead on
// another goroutine (default 8; 0: none, every read on the caller's). It is
// for measuring: on one core the reads ahead only add hand-overs.
func (r *Reader) SetReadAhead(n int) {
	r.ahead.wait()
	r.ahead.depth = max(n, 0)
}

// prefetch is a file-mode Reader's reads ahead: chunks of the input from
// next on, read in order by one goroutine (a goroutine, a channel and a
// stack per chunk cost 3% of a large recording's reading, their first use
// of fresh memory included). The goroutine ends when the Reader is closed
// or collected.
type prefetch struct {
	depth   int
	next    int64 // where the next read to start begins
	pending []*fetch
	spare   []*fetch    // fetches taken back, for the next reads
	reqs    chan *fetch // to the reading goroutine, nil until the first read
	cleanup runtime.Cleanup
}

type fetch struct {
	c    *Chunk
	off  int64 // the input offset of c.buf[headroom]
	n    int
	want int
	err  error
	done chan struct{} // one token when the read is over
}

// start keeps depth reads under way, from p.next on up to r.end.
func (p *prefetch) start(r *Reader) {
	for len(p.pending) < p.depth && p.next < r.end {
		if p.reqs == nil {
			p.reqs = make(chan *fetch, 64)
			go readFetches(r.ra, p.reqs)
			p.cleanup = runtime.AddCleanup(r, func(c chan *fetch) { close(c) }, p.reqs)
		}
		n := min(int64(chunkSize), r.end-p.next)
		var f *fetch
		if k := len(p.spare); k > 0 {
			f, p.spare = p.spare[k-1], p.spare[:k-1]
		} else {
			f = &fetch{done: make(chan struct{}, 1)}
		}
		f.c, f.off, f.want, f.n, f.err = r.pool.get(headroom+int(n)), p.next, int(n), 0, nil
		p.pending = append(p.pending, f)
		p.next += n
		p.reqs <- f
	}
}

// readFetches reads what is asked, until reqs is closed.
func readFetches(ra io.ReaderAt, reqs chan *fetch) {
	for f := range reqs {
		buf := f.c.buf[headroom : headroom+f.want]
		f.n, f.err = ra.ReadAt(buf, f.off)
		if f.n == len(buf) {
			f.err = nil
		}
		f.done <- struct{}{}
	}
}

// take waits for the oldest read under way and returns it; the caller
// gives it back with reuse once it took its chunk.
func (p *prefetch) take() *fetch {
	f := p.pending[0]
	p.pending = append(p.pending[:0], p.pending[1:]...)
	<-f.done
	return f
}

func (p *prefetch) reuse(f *fetch) {
	f.c, f.err = nil, nil
	p.spare = append(p.spare, f)
}

// stop forgets the reads under way (they finish by themselves; their
// chunks go to the garbage collector).
func (p *prefetch) stop() {
	p.pending = p.pending[:0]
}

// wait lets the reads under way finish, so that none reads from the input
// once its Reader is closed.
func (p *prefetch) wait() {
	for _, f := range p.pending {
		<-f.done
	}
	p.stop()
}

// end waits for the reads under way and ends the reading goroutine.
func (p *prefetch) end() {
	p.wait()
	if p.reqs != nil {
		p.cleanup.Stop()
		close(p.reqs)
		p.reqs = nil
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
	from := r.pos + int64(len(left)) // where the new bytes must start
	if r.ahead.depth > 0 && len(left) <= headroom && need <= int64(len(left)+chunkSize) {
		if len(r.ahead.pending) > 0 && r.ahead.pending[0].off != from {
			r.ahead.stop() // the reader skipped ahead (auxtrace data)
		}
		if len(r.ahead.pending) == 0 {
			r.ahead.next = from
		}
		r.ahead.start(r)
		if len(r.ahead.pending) > 0 {
			f := r.ahead.take()
			r.ahead.start(r)
			c, n, ferr := f.c, f.n, f.err
			r.ahead.reuse(f)
			start := headroom - len(left)
			copy(c.buf[start:headroom], left)
			r.setChunk(c, c.buf[start:headroom+n], r.pos)
			if int64(len(r.mem)) < min(need, r.end-r.pos) {
				return noEOF(orEOF(ferr))
			}
			return nil
		}
	}
	want := min(max(need, int64(chunkSize)), r.end-r.pos)
	c := r.pool.get(int(want))
	c.buf = append(c.buf[:0], left...)
	n, err := r.ra.ReadAt(c.buf[len(left):want], from)
	c.buf = c.buf[:len(left)+n]
	if n < int(want)-len(left) && err == nil {
		err = io.ErrUnexpectedEOF
	}
	r.setChunk(c, c.buf, r.pos)
	if int64(len(c.buf)) < min(need, r.end-r.pos) {
		return noEOF(err)
	}
	return nil
}

// setChunk makes mem, which lies in c, the bytes read from off on.
func (r *Reader) setChunk(c *Chunk, mem []byte, off int64) {
	if r.chunk != nil {
		r.chunk.Release()
	}
	r.chunk, r.mem, r.memOff = c, mem, off
}

func orEOF(err error) error {
	if err == nil {
		return io.ErrUnexpectedEOF
	}
	return err
}
