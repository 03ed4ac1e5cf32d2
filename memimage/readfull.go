package memimage

import (
	"io"
)

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
// wants one (debug/elf, binary.Read on a section). Offsets are addresses; a
// failed read returns a *ReadError, wrapped in nothing.
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
