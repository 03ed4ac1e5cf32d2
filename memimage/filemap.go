package memimage

import (
	"errors"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fileMap is the lazily made memory mapping behind one file section.
//
// Reads take no lock. The trick: a section's address range, once mapped, stays
// reserved for the section's whole life. Unmapping it (cache eviction, a
// truncated file) replaces the file mapping with an inaccessible anonymous
// one at the same addresses, so the range is never reused for anything
// else, and a reader that raced with the unmapping takes a recoverable fault
// (see guardedCopy) and retries under mu instead of reading foreign bytes.
// Mapping again puts the file back at the same addresses. The range is
// released only when the section becomes unreachable.
//
// Lock order: SectionCache.mu before fileMap.mu; nobody holding a fileMap lock
// takes the cache lock.
type fileMap struct {
	path         string
	offset, size uint64
	recorded     fileStamp
	cache        *SectionCache // nil: stays mapped until the section is unreachable

	lruStamp atomic.Uint64 // cache clock value at the last use
	inLRU    bool          // guarded by cache.mu
	counted  uint64        // bytes the cache counts for this section; guarded by cache.mu

	// mapped says whether view holds the file's bytes. It is set after view
	// (so a reader that sees true also sees view) and cleared before the
	// range is made inaccessible.
	mapped atomic.Bool

	mu   sync.Mutex // serialises mapping and unmapping
	base []byte     // the reserved, page-aligned range; set once
	view []byte     // the section's bytes within base; set once

	// chunks holds resident copies of the section's bytes, which Readers
	// serve without a fault guard (see resident.go). Stored under mu, and
	// dropped with the mapping.
	chunks atomic.Pointer[chunkTable]
	// gen changes whenever the mapping and its chunks are dropped, so that
	// Readers stop serving bytes they took from them.
	gen atomic.Uint32
}

// fileStamp is what staleness is judged by.
type fileStamp struct {
	size     int64
	mtime    time.Time
	dev, ino uint64
}

func stampOf(st *unix.Stat_t) fileStamp {
	return fileStamp{
		size:  st.Size,
		mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec),
		dev:   st.Dev,
		ino:   st.Ino,
	}
}

func statFile(path string) (fileStamp, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileStamp{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return stampOf(&st), nil
}

// staleness compares a file's current stamp with the recorded one.
func (f *fileMap) staleness(now fileStamp) error {
	r := f.recorded
	e := &StaleFileError{Path: f.path, RecordedSize: r.size, NowSize: now.size,
		RecordedMtime: r.mtime, NowMtime: now.mtime}
	switch {
	case now.size != r.size:
		e.Reason = "size"
	case !now.mtime.Equal(r.mtime):
		e.Reason = "mtime"
	case now.dev != r.dev || now.ino != r.ino:
		e.Reason = "identity"
	default:
		return nil
	}
	return e
}

// mapLength is how many bytes a mapping of the section takes (page aligned at
// the start, as mmap requires).
func (f *fileMap) mapLength() uint64 {
	return f.size + f.offset&uint64(os.Getpagesize()-1) // page sizes are powers of 2
}

// mapFile opens the file, checks that it is still the file the section was made
// from, and maps the section's range read-only at addr (nil: anywhere).
func (f *fileMap) mapFile(addr unsafe.Pointer) ([]byte, error) {
	fd, err := unix.Open(f.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &StaleFileError{Path: f.path, Reason: "missing",
			Err: &os.PathError{Op: "open", Path: f.path, Err: err}}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &StaleFileError{Path: f.path, Reason: "missing",
			Err: &os.PathError{Op: "fstat", Path: f.path, Err: err}}
	}
	if err := f.staleness(stampOf(&st)); err != nil {
		return nil, err
	}
	flags := unix.MAP_PRIVATE
	if addr != nil {
		flags |= unix.MAP_FIXED
	}
	length := f.mapLength()
	p, err := unix.MmapPtr(fd, int64(f.offset-(length-f.size)), addr, uintptr(length), unix.PROT_READ, flags)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: f.path, Err: err}
	}
	return unsafe.Slice((*byte)(p), length), nil
}

// readAt copies section bytes at off into p (off+len(p) <= f.size).
func (f *fileMap) readAt(p []byte, off uint64) (int, error) {
	if f.mapped.Load() {
		if n, ok := guardedCopy(p, f.view[off:]); ok {
			if c := f.cache; c != nil && f.lruStamp.Load() != c.clock.Load() {
				// Only when another section was used since this one: the
				// hot loop over one section touches no shared cache line.
				f.lruStamp.Store(c.clock.Add(1))
			}
			return n, nil
		}
		// Unmapped under us, or the file shrank: sort it out under the lock.
	}
	return f.readSlow(p, off)
}

// readSlow maps the section if needed and reads under the lock, so nothing
// can unmap it during the copy; a fault now means the file shrank. Sections
// larger than their cache's limit are mapped only for the duration of the read.
func (f *fileMap) readSlow(p []byte, off uint64) (int, error) {
	c := f.cache
	if c != nil && f.mapLength() > c.limit.Load() {
		base, err := f.mapFile(nil)
		if err != nil {
			return 0, err
		}
		n, ok := guardedCopy(p, base[f.mapLength()-f.size+off:])
		unix.MunmapPtr(unsafe.Pointer(&base[0]), uintptr(len(base)))
		if !ok {
			return 0, &StaleFileError{Path: f.path, Reason: "truncated while mapped"}
		}
		return n, nil
	}
	f.mu.Lock()
	fresh := false
	if !f.mapped.Load() {
		if err := f.mapLocked(); err != nil {
			f.mu.Unlock()
			return 0, err
		}
		fresh = true
		if c != nil {
			f.lruStamp.Store(c.clock.Add(1))
		}
	}
	n, ok := guardedCopy(p, f.view[off:])
	if !ok {
		f.unmapLocked()
	}
	f.mu.Unlock()
	if !ok {
		if c != nil {
			c.forget(f)
		}
		return 0, &StaleFileError{Path: f.path, Reason: "truncated while mapped"}
	}
	if fresh && c != nil {
		c.noteMapped(f)
	}
	return n, nil
}

// mapLocked maps the file into the section's reserved range, reserving one on
// first use.
func (f *fileMap) mapLocked() error {
	var addr unsafe.Pointer
	if f.base != nil {
		addr = unsafe.Pointer(&f.base[0])
	}
	base, err := f.mapFile(addr)
	if err != nil {
		return err
	}
	if f.base == nil {
		adjust := f.mapLength() - f.size
		f.base, f.view = base, base[adjust:adjust+f.size]
	}
	f.mapped.Store(true)
	return nil
}

// unmapLocked drops the file mapping but keeps the range reserved and
// inaccessible. It reports whether there was a mapping to drop.
func (f *fileMap) unmapLocked() bool {
	if !f.mapped.Load() {
		return false
	}
	f.mapped.Store(false)
	f.chunks.Store(nil)
	f.gen.Add(1)
	_, err := unix.MmapPtr(-1, 0, unsafe.Pointer(&f.base[0]), uintptr(len(f.base)), unix.PROT_NONE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|unix.MAP_NORESERVE)
	if err != nil {
		// Out of memory for page tables; the file stays mapped, which is
		// safe, only not bounded.
		f.mapped.Store(true)
		return false
	}
	return true
}

// unmap drops the file mapping (see unmapLocked).
func (f *fileMap) unmap() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unmapLocked()
}

// destroy releases the reserved range once the section is unreachable.
func (f *fileMap) destroy() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.base != nil {
		f.mapped.Store(false)
		f.chunks.Store(nil)
		f.gen.Add(1)
		unix.MunmapPtr(unsafe.Pointer(&f.base[0]), uintptr(len(f.base)))
		f.base, f.view = nil, nil
	}
}

// guardedCopy copies from a file mapping. If the file was truncated under the
// mapping, or the mapping was made inaccessible by an eviction, touching it
// raises SIGBUS or SIGSEGV; with panic-on-fault set that becomes a
// recoverable panic, reported here as ok == false, instead of killing the
// agent. recover runs only when the copy did not finish, which keeps it off
// the common path.
func guardedCopy(dst, src []byte) (n int, ok bool) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if !ok {
			if r := recover(); r != nil && !isFault(r) {
				panic(r)
			}
		}
	}()
	return copy(dst, src), true
}

// touch reads the byte at section offset off of the mapping under the same
// guard as guardedCopy, without a copy: the check that a page is still there
// (a truncation takes pages away). It reports false when the section is not
// mapped or the page is gone; readAt then sorts out which.
func (f *fileMap) touch(off uint64) (b byte, ok bool) {
	if !f.mapped.Load() {
		return 0, false
	}
	p := &f.view[off]
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if !ok {
			if r := recover(); r != nil && !isFault(r) {
				panic(r)
			}
		}
	}()
	return *p, true // a function with a defer is never inlined: the load stays
}

// isFault reports whether a recovered value is the panic a memory fault
// raises under panic-on-fault (a runtime.Error with an Addr method).
func isFault(r any) bool {
	var fault interface{ Addr() uintptr }
	err, isErr := r.(error)
	return isErr && errors.As(err, &fault)
}
