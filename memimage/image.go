package memimage

import (
	"errors"
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
