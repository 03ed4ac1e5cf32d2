package memimage

import (
	"encoding/binary"
	"sync/atomic"
)

var le = binary.LittleEndian

// A Reader reads one address space of an image, as Image.Read and
// Image.ReadFull do, but fast enough for a stream of small reads (the
// unwinder's words and blocks, the symbolizer's structs): a read that stays
// inside the stretch of bytes the previous read came from costs a bounds
// check and a copy.
//
// Image.Read pays about 6 ns to find the section and, for a file section,
// about 5 ns for the fault guard that turns a SIGBUS from a truncated file
// into an error; a 16-byte copy costs about 3 ns. A Reader remembers where
// its last read came from (a "window": up to 128 KiB of one section, with no
// overlay bytes in it) and serves the next read from the same window without
// either. For file sections the window's bytes are a resident copy of the
// 128 KiB chunk around the read, taken out of the mapping once under the
// guard and kept with the section for every Reader (see resident.go): bytes
// in the mapping itself can fault, and a guard-free copy from it could crash
// the program.
//
// The copies cost memory and a first read: each chunk a Reader touched stays
// resident as long as the section stays mapped, counted against the
// SectionCache's byte limit (a section without a cache keeps them until it
// is dropped), and the first read of a chunk costs the 128 KiB copy, about
// 15 µs, on top of Image.Read's cost of mapping. For a few reads here and
// there, Image.Read is the better choice.
//
// A Reader returns the same bytes, counts and IDs as the image's own methods
// and the same kinds of errors, with one difference in timing: the image's
// methods notice a file truncated under its mapping when a read touches a
// lost page, while a Reader notices it when it moves to another window (it
// checks that the window's last page is still there) or when any other read
// of the section noticed it first. Until then it keeps returning the bytes
// it copied out of the mapping earlier, exactly what Image.Read returned for
// them at that time.
//
// Any change to the image (Add, Remove*, SetOriginal, SetFallback, ...) and
// any eviction of the section from its cache makes the Reader look again, so
// it never returns bytes the image no longer holds.
//
// A Reader is used by one goroutine at a time (make one per goroutine, e.g.
// one per unwinder); the image may be read and changed concurrently. It keeps
// the section its window came from reachable, even after the image dropped
// it, until it reads elsewhere.
type Reader struct {
	im   *Image
	asid ASID

	// The window: data holds the image's bytes at [lo, lo+len(data)), valid
	// while the image's state is st and *gen == genv (the section's mapping
	// was not dropped).
	lo   uint64
	data []byte
	st   *imageState
	gen  *atomic.Uint32
	genv uint32
	id   SectionID

	// The stretch of one section piece that the window lies in:
	// [plo, plo+plen) in state st, with no overlay byte in it, holding the
	// bytes of sec from offset poff on. A read outside the window but
	// inside the stretch only needs another chunk (file sections).
	plo, plen, poff uint64
	sec             *Section
	pend            bool // the stretch ends where the piece's bytes do
	atEnd           bool // the window ends where the piece's bytes do

	probe [1]byte
}

// constGen is the generation of sections whose bytes never go away
// (memory sections).
var constGen atomic.Uint32

// NewReader returns a Reader of the address space asid of im.
func (im *Image) NewReader(asid ASID) *Reader {
	return &Reader{im: im, asid: asid}
}

// ASID returns the address space the Reader reads.
func (r *Reader) ASID() ASID { return r.asid }

// Read is Image.Read of r's address space: up to len(p) bytes at addr, never
// across a section boundary, and the SectionID they came from.
func (r *Reader) Read(p []byte, addr uint64) (n int, id SectionID, err error) {
	// off < end: p is not empty, and addr is not below the window (off
	// would be huge, and off+len(p) would wrap to below it).
	if off, end := addr-r.lo, addr-r.lo+uint64(len(p)); off < end && end <= uint64(len(r.data)) &&
		r.st == r.im.state.Load() && r.gen.Load() == r.genv {
		d := r.data[off:]
		if n := len(p); n >= 8 && n <= 16 {
			// Words and pairs of words (the unwinder's and symbolizer's
			// usual reads): two overlapping 8-byte moves cost less than
			// the call into memmove that copy makes.
			lo, hi := le.Uint64(d), le.Uint64(d[n-8:])
			le.PutUint64(p[n-8:], hi)
			le.PutUint64(p, lo)
			return n, r.id, nil
		}
		return copy(p, d), r.id, nil
	}
	// A read that runs past the window is served here too: the window may
	// end at a chunk or an overlay byte, where Image.Read goes on.
	return r.readSlow(p, addr)
}

// ReadFull is Image.ReadFull of r's address space: len(p) bytes at addr, or
// the number of valid bytes and a *ReadError.
func (r *Reader) ReadFull(p []byte, addr uint64) (int, error) {
	if off, end := addr-r.lo, addr-r.lo+uint64(len(p)); off < end && end <= uint64(len(r.data)) &&
		r.st == r.im.state.Load() && r.gen.Load() == r.genv {
		return copy(p, r.data[off:]), nil
	}
	return r.readFullSlow(p, addr)
}

func (r *Reader) readFullSlow(p []byte, addr uint64) (int, error) {
	done := 0
	for done < len(p) {
		at := addr + uint64(done)
		if at < addr {
			return done, &ReadError{ASID: r.asid, Addr: at, Valid: done,
				Err: &RangeError{Addr: addr, Size: uint64(len(p))}}
		}
		n, _, err := r.Read(p[done:], at)
		if err != nil {
			return done, &ReadError{ASID: r.asid, Addr: at, Valid: done, Err: err}
		}
		done += n
	}
	return done, nil
}

// readSlow finds a new window for addr, or reads the way Image.Read does
// when there is none (fallback, overlay bytes, stale files).
func (r *Reader) readSlow(p []byte, addr uint64) (int, SectionID, error) {
	r.data = nil
	if len(p) == 0 {
		return 0, 0, nil
	}
	p, err := clipTop(p, r.asid, addr)
	if err != nil {
		return 0, 0, err
	}
	st := r.im.state.Load()
	if (st == r.st && addr-r.plo < r.plen && r.sec != nil) || r.stretch(st, addr) {
		if r.window(addr) {
			// Serve it from the window if it fits, or if the window
			// ends where the section piece does: a read stops there.
			if d := r.data[addr-r.lo:]; len(p) <= len(d) || r.atEnd {
				return copy(p, d), r.id, nil
			}
		}
	}
	return readIn(st, p, r.asid, addr)
}

// stretch finds the stretch of a section piece around addr in state st that
// holds no overlay byte, and reports whether there is one.
func (r *Reader) stretch(st *imageState, addr uint64) bool {
	r.st, r.sec = st, nil
	win, limit, _ := st.sections.lookup(r.asid, addr)
	if win == nil {
		return false
	}
	lo, hi := win.begin, limit
	r.pend = true
	if st.sections.matching(r.asid) > 1 {
		// A newer piece of another matching space may hold bytes below
		// addr; lookup only bounds the stretch above.
		lo = addr
	}
	if len(st.overlay) > 0 {
		var ok bool
		end := hi
		if lo, hi, ok = st.overlay.gapAround(r.asid, addr, lo, hi); !ok {
			return false
		}
		r.pend = hi == end
	}
	r.plo, r.plen, r.poff = lo, hi-lo, win.offset+(lo-win.begin)
	r.sec, r.id = win.section, win.id
	return true
}

// window makes the window around addr, which lies in the stretch, and
// reports whether it could: for a file section, the chunk around addr must
// be resident or be made so.
func (r *Reader) window(addr uint64) bool {
	off := r.poff + (addr - r.plo) // section offset of addr
	// below and above count the window's bytes before and from addr.
	below, above := addr-r.plo, r.plen-(addr-r.plo)
	s := r.sec
	gen, genv := &constGen, uint32(0)
	var data []byte // section bytes from offset base on
	var base uint64
	if s.data != nil {
		data = s.data
	} else {
		f := s.file
		gen, genv = &f.gen, f.gen.Load() // before the chunk: a drop after it shows
		k := off >> chunkShift
		chunk, fresh, err := f.residentChunk(k)
		if err != nil {
			return false // Image.Read's way reports it, or reads the fallback
		}
		data, base = chunk, k<<chunkShift
		above = min(above, uint64(len(data))-(off-base))
		if !fresh {
			// The chunk was copied earlier: check that the file still has
			// the window's last page (a truncation takes it away) before
			// serving the window.
			if _, ok := f.touch(off + above - 1); !ok {
				// Not mapped, or the page is gone: readAt maps the
				// section again or reports the truncation.
				if _, err := f.readAt(r.probe[:], off+above-1); err != nil {
					return false
				}
			}
		}
	}
	pos := off - base // where addr's byte is in data
	below = min(below, pos)
	above = min(above, uint64(len(data))-pos)
	r.lo, r.data = addr-below, data[pos-below:pos+above]
	r.gen, r.genv = gen, genv
	r.atEnd = r.pend && addr+above == r.plo+r.plen
	return true
}
