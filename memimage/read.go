package memimage

import (
	"errors"
	"fmt"
	"io"
)

// Read reads up to len(p) bytes at addr in asid from whatever serves addr: the
// newest section covering it, else the fallback. It never crosses a section
// boundary, so it may return fewer bytes than asked for; loop (or use
// ReadFull) for more. id is the SectionCache ID of the section read, 0 for
// sections added without a cache and for the fallback.
//
// Original bytes recorded with SetOriginal replace whatever the section or
// the fallback returned; where they exist but nothing else serves addr, they
// are returned on their own.
//
// A section whose file went stale is read through the fallback instead, when
// there is one and it can read the address: the fallback reads the target
// itself (the process, the core), so its bytes are right when the file is not.
//
// It returns an error only when it read nothing: an *UnmappedError (which
// wraps ErrNoMap), a *StaleFileError, or a *FallbackError.
func (im *Image) Read(p []byte, asid ASID, addr uint64) (n int, id SectionID, err error) {
	if len(p) == 0 {
		return 0, 0, nil
	}
	p, err = clipTop(p, asid, addr)
	if err != nil {
		return 0, 0, err
	}
	return readIn(im.state.Load(), p, asid, addr)
}

// clipTop cuts p so that addr+len(p) stays representable. The address
// space's last byte is never readable, as no section can hold it.
func clipTop(p []byte, asid ASID, addr uint64) ([]byte, error) {
	if room := ^uint64(0) - addr; uint64(len(p)) > room {
		if room == 0 {
			return nil, &UnmappedError{ASID: asid, Addr: addr}
		}
		p = p[:room]
	}
	return p, nil
}

// readIn is Read against one version of the image; Reader shares it.
// len(p) > 0 and addr+len(p) does not wrap.
func readIn(st *imageState, p []byte, asid ASID, addr uint64) (n int, id SectionID, err error) {
	win, limit, bounded := st.sections.lookup(asid, addr)
	if bounded && limit-addr < uint64(len(p)) {
		p = p[:limit-addr]
	}
	switch {
	case win != nil:
		n, err = win.section.read(p, win.offset+(addr-win.begin))
		id = win.id
		if err != nil && st.fallback != nil && isStale(err) {
			// The fallback reads the target itself, so its bytes are right
			// even when the file is not; keep the stale error if it has
			// nothing.
			if fn, ferr := callFallback(st.fallback, p, asid, addr); ferr == nil {
				n, id, err = fn, 0, nil
			}
		}
	case st.fallback != nil:
		n, err = callFallback(st.fallback, p, asid, addr)
	default:
		err = &UnmappedError{ASID: asid, Addr: addr}
	}
	if len(st.overlay) == 0 {
		return n, id, err
	}
	if n > 0 {
		applyOverlay(st.overlay, p[:n], asid, addr)
		return n, id, nil
	}
	// Nothing else could be read, but the overlay may know the bytes.
	o, olimit, _ := st.overlay.lookup(asid, addr)
	if o == nil {
		return 0, id, err
	}
	if olimit-addr < uint64(len(p)) {
		p = p[:olimit-addr]
	}
	return copy(p, o.section.data[o.offset+(addr-o.begin):]), 0, nil
}

// isStale is a function of its own so that the errors.As target is allocated
// only on this rare path, not on every read.
func isStale(err error) bool {
	var stale *StaleFileError
	return errors.As(err, &stale)
}

func callFallback(fn ReadFunc, p []byte, asid ASID, addr uint64) (int, error) {
	n, err := fn(p, asid, addr)
	switch {
	case n < 0 || n > len(p):
		return 0, &FallbackError{ASID: asid, Addr: addr,
			Err: fmt.Errorf("returned %d bytes for a %d-byte buffer", n, len(p))}
	case n > 0:
		return n, nil
	case err != nil:
		return 0, &FallbackError{ASID: asid, Addr: addr, Err: err}
	default:
		// (0, nil) would make callers loop forever; it means nothing is there.
		return 0, &UnmappedError{ASID: asid, Addr: addr}
	}
}

// ReadFull reads len(p) bytes at addr in asid, looping across sections, the
// fallback and the overlay. It returns len(p) and nil, or the number of valid
// bytes at the start of p and a *ReadError naming the first address it could
// not read (the unwinder's and the TCF Memory service's "N bytes valid,
// failed at X").
func (im *Image) ReadFull(p []byte, asid ASID, addr uint64) (int, error) {
	done := 0
	for done < len(p) {
		at := addr + uint64(done)
		if at < addr {
			return done, &ReadError{ASID: asid, Addr: at, Valid: done,
				Err: &RangeError{Addr: addr, Size: uint64(len(p))}}
		}
		n, _, err := im.Read(p[done:], asid, at)
		if err != nil {
			return done, &ReadError{ASID: asid, Addr: at, Valid: done, Err: err}
		}
		done += n
	}
	return done, nil
}

// ReaderAt returns an io.ReaderAt over the address space asid, for code that
// wants one (debug/elf on an in-memory ELF image, io.NewSectionReader).
// Offsets are addresses, so addresses at or above 2^63 cannot be reached this
// way. A short read returns ReadFull's *ReadError.
func (im *Image) ReaderAt(asid ASID) io.ReaderAt {
	return readerAt{im, asid}
}

type readerAt struct {
	im   *Image
	asid ASID
}

func (r readerAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &RangeError{Addr: uint64(off), Size: uint64(len(p))}
	}
	return r.im.ReadFull(p, r.asid, uint64(off))
}
