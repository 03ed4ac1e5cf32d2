package memimage

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
)

// ReadFunc is an image's fallback: it reads target memory at addr in asid for
// every address no section covers (process_vm_readv for a live process). It
// returns how many bytes it put at the start of p; a short count is fine, the
// caller asks again for the rest. It returns an error only when it read
// nothing; an error that wraps ErrNoMap means "nothing there". It may be
// called from many goroutines at once.
type ReadFunc func(p []byte, asid ASID, addr uint64) (int, error)

// An Image is a traced memory image: sections placed at addresses per address
// space, a fallback for the rest, and an overlay of original bytes that hides
// sonde's own patches. The zero Image is not usable; call New.
type Image struct {
	name  string
	mu    sync.Mutex // serialises mutations
	state atomic.Pointer[imageState]
}

// imageState is one immutable version of an image. Mutations build the next
// version under Image.mu and publish it atomically, which makes every
// mutation transactional and lets reads go without locks.
type imageState struct {
	sections layer
	overlay  layer // memory pieces holding original bytes
	fallback ReadFunc
	seq      uint64 // the newest piece's seq
}

// Mapping describes one section, or the piece of it still visible, as placed
// in an image.
type Mapping struct {
	ASID       ASID
	Begin, End uint64 // the virtual addresses [Begin, End)
	Section    *Section
	// SectionOffset is the offset within Section of the byte at Begin; the
	// file offset is Section.Offset() + SectionOffset.
	SectionOffset uint64
	ID            SectionID
}

// New returns an empty image. The name is for people (logs, errors).
func New(name string) *Image {
	im := &Image{name: name}
	im.state.Store(&imageState{})
	return im
}

// Name returns the name given to New.
func (im *Image) Name() string { return im.name }

// update runs fn on a copy of the current state and publishes the result, all
// under the mutation lock.
func (im *Image) update(fn func(st *imageState) error) error {
	im.mu.Lock()
	defer im.mu.Unlock()
	next := *im.state.Load()
	if err := fn(&next); err != nil {
		return err
	}
	im.state.Store(&next)
	return nil
}

// SetFallback sets the function that reads every address no section covers,
// replacing any previous one; nil removes it.
func (im *Image) SetFallback(fn ReadFunc) {
	im.update(func(st *imageState) error { st.fallback = fn; return nil })
}

// pieceRange checks that [addr, addr+size) is a non-empty range that does not
// wrap, and returns its end.
func pieceRange(addr, size uint64) (uint64, error) {
	end := addr + size
	if size == 0 || end < addr || end == 0 {
		return 0, &RangeError{Addr: addr, Size: size}
	}
	return end, nil
}

// Add places all of s at vaddr in the address space asid. The new section
// wins: older sections it overlaps in every address space matching asid are
// shrunk, split (both parts keep their ID) or removed. On error the image is
// unchanged.
func (im *Image) Add(s *Section, asid ASID, vaddr uint64) error {
	return im.add(s, asid, vaddr, 0)
}

// AddCached places the cache's section id at its load address in asid, with
// the same rules as Add; reads of its bytes report id.
func (im *Image) AddCached(c *SectionCache, id SectionID, asid ASID) error {
	s, vaddr, err := c.Section(id)
	if err != nil {
		return err
	}
	return im.add(s, asid, vaddr, id)
}

func (im *Image) add(s *Section, asid ASID, vaddr uint64, id SectionID) error {
	if s == nil {
		return errors.New("memimage: Add of a nil section")
	}
	end, err := pieceRange(vaddr, s.size)
	if err != nil {
		return err
	}
	return im.update(func(st *imageState) error {
		st.seq++
		st.sections = st.sections.add(asid, piece{begin: vaddr, end: end, section: s, id: id, seq: st.seq})
		return nil
	})
}

// Copy adds every section of from to im, oldest first, so that from's sections
// win over im's where they overlap and keep their order among themselves. The
// overlay comes along too (a forked child inherits its parent's breakpoints);
// the fallback does not. It returns how many sections it skipped, as libipt's
// pt_image_copy does; since every section in an image passed Add's checks,
// none is ever skipped today. Copying an image into itself does nothing.
func (im *Image) Copy(from *Image) (skipped int) {
	if from == im {
		return 0
	}
	src := from.state.Load()
	im.update(func(st *imageState) error {
		st.sections = appendNewest(st.sections, src.sections, &st.seq)
		st.overlay = appendNewest(st.overlay, src.overlay, &st.seq)
		return nil
	})
	return 0
}

// appendNewest adds the pieces of src to dst in the order they were added to
// src, giving them new sequence numbers.
func appendNewest(dst, src layer, seq *uint64) layer {
	type placed struct {
		asid ASID
		p    piece
	}
	var all []placed
	for _, sp := range src {
		for _, p := range sp.pieces {
			all = append(all, placed{sp.asid, p})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].p.seq < all[j].p.seq })
	for _, a := range all {
		*seq++
		a.p.seq = *seq
		dst = dst.add(a.asid, a.p)
	}
	return dst
}

// RemoveFile removes every section of the file name (Section.Name) in address
// spaces matching asid, and returns how many it removed; each piece of a split
// section counts.
func (im *Image) RemoveFile(name string, asid ASID) int {
	var n int
	im.update(func(st *imageState) error {
		st.sections, n = st.sections.removeIf(asid, func(p *piece) bool { return p.section.name == name })
		return nil
	})
	return n
}

// RemoveASID removes every section in address spaces matching asid (a process
// exited or exec'd), and returns how many it removed. The overlay is not
// touched; ClearOriginal removes overlay bytes.
func (im *Image) RemoveASID(asid ASID) int {
	var n int
	im.update(func(st *imageState) error {
		st.sections, n = st.sections.removeIf(asid, func(*piece) bool { return true })
		return nil
	})
	return n
}

// SetOriginal records that the target's bytes at addr in asid were original
// before sonde patched them (a breakpoint, a probe jump). From now on reads of
// those addresses return original, whatever the sections or the fallback hold.
// Newer calls win over older ones where they overlap. The bytes are copied.
func (im *Image) SetOriginal(asid ASID, addr uint64, original []byte) error {
	end, err := pieceRange(addr, uint64(len(original)))
	if err != nil {
		return err
	}
	s := &Section{name: "", size: uint64(len(original)), data: append([]byte(nil), original...)}
	return im.update(func(st *imageState) error {
		st.seq++
		st.overlay = st.overlay.add(asid, piece{begin: addr, end: end, section: s, seq: st.seq})
		return nil
	})
}

// ClearOriginal forgets the original bytes recorded for [addr, addr+size) in
// address spaces matching asid (the patch was removed), so reads there see the
// sections and the fallback again.
func (im *Image) ClearOriginal(asid ASID, addr, size uint64) error {
	end, err := pieceRange(addr, size)
	if err != nil {
		return err
	}
	return im.update(func(st *imageState) error {
		st.overlay = st.overlay.cut(asid, addr, end)
		return nil
	})
}

// Sections lists the image's sections (the visible pieces of them), sorted by
// address, then address space.
func (im *Image) Sections() []Mapping {
	st := im.state.Load()
	var out []Mapping
	for _, sp := range st.sections {
		for _, p := range sp.pieces {
			out = append(out, Mapping{ASID: sp.asid, Begin: p.begin, End: p.end,
				Section: p.section, SectionOffset: p.offset, ID: p.id})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Begin != b.Begin {
			return a.Begin < b.Begin
		}
		if a.ASID.Space != b.ASID.Space {
			return a.ASID.Space < b.ASID.Space
		}
		return a.ASID.Generation < b.ASID.Generation
	})
	return out
}

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
	if room := ^uint64(0) - addr; uint64(len(p)) > room {
		// Keep addr+n representable; the address space's last byte is
		// never readable, as no section can hold it.
		if room == 0 {
			return 0, 0, &UnmappedError{ASID: asid, Addr: addr}
		}
		p = p[:room]
	}
	st := im.state.Load()
	win, limit, bounded := st.sections.lookup(asid, addr)
	if bounded && limit-addr < uint64(len(p)) {
		p = p[:limit-addr]
	}
	switch {
	case win != nil:
		n, err = win.section.read(p, win.offset+(addr-win.begin))
		id = win.id
		var stale *StaleFileError
		if err != nil && st.fallback != nil && errors.As(err, &stale) {
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

// applyOverlay puts original bytes over the n bytes just read at addr.
func applyOverlay(ov layer, buf []byte, asid ASID, addr uint64) {
	end := addr + uint64(len(buf)) // cannot wrap: reads stop at the last byte
	ov.overlapping(asid, addr, end, func(o *piece) {
		lo, hi := max(o.begin, addr), min(o.end, end)
		copy(buf[lo-addr:hi-addr], o.section.data[o.offset+(lo-o.begin):])
	})
}
