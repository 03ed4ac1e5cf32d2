package memimage

import (
	"errors"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// fileMap is the lazily made memory mapping behind one file section.
//
// Readers hold mu for reading while they copy out of the mapping; mapping and
// unmapping hold it for writing, so a mapping never disappears under a copy.
// Lock order: SectionCache.mu before fileMap.mu; nobody holding a fileMap lock
// takes the cache lock.
type fileMap struct {
	path         string
	offset, size uint64
	recorded     fileStamp
	cache        *SectionCache // nil: stays mapped until the section is unreachable

	lruStamp atomic.Uint64 // cache clock value at the last use; guarded by nothing
	inLRU    bool          // guarded by cache.mu

	mu   sync.RWMutex
	base []byte // the whole page-aligned mapping; nil while unmapped
	view []byte // the section's bytes within base
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
	return f.size + f.offset%uint64(os.Getpagesize())
}

// mapFile opens the file, checks that it is still the file the section was made
// from, and maps the section's range read-only.
func (f *fileMap) mapFile() (base, view []byte, err error) {
	fd, err := unix.Open(f.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &StaleFileError{Path: f.path, Reason: "missing",
			Err: &os.PathError{Op: "open", Path: f.path, Err: err}}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, nil, &StaleFileError{Path: f.path, Reason: "missing",
			Err: &os.PathError{Op: "fstat", Path: f.path, Err: err}}
	}
	if err := f.staleness(stampOf(&st)); err != nil {
		return nil, nil, err
	}
	adjust := f.offset % uint64(os.Getpagesize())
	base, err = unix.Mmap(fd, int64(f.offset-adjust), int(f.size+adjust), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, &os.PathError{Op: "mmap", Path: f.path, Err: err}
	}
	return base, base[adjust : adjust+f.size], nil
}

// readAt copies section bytes at off into p (off+len(p) <= f.size).
func (f *fileMap) readAt(p []byte, off uint64) (int, error) {
	f.mu.RLock()
	if f.view != nil {
		n, ok := guardedCopy(p, f.view[off:])
		f.mu.RUnlock()
		if !ok {
			return 0, f.faulted()
		}
		if c := f.cache; c != nil && f.lruStamp.Load() != c.clock.Load() {
			// Only when another section was used since this one: the hot
			// loop over one section touches no shared cache line.
			f.lruStamp.Store(c.clock.Add(1))
		}
		return n, nil
	}
	f.mu.RUnlock()
	return f.readSlow(p, off)
}

// readSlow maps the section and reads; sections larger than their cache's
// limit are mapped only for the duration of the read.
func (f *fileMap) readSlow(p []byte, off uint64) (int, error) {
	c := f.cache
	if c != nil && f.mapLength() > c.limit.Load() {
		base, view, err := f.mapFile()
		if err != nil {
			return 0, err
		}
		n, ok := guardedCopy(p, view[off:])
		unix.Munmap(base)
		if !ok {
			return 0, &StaleFileError{Path: f.path, Reason: "truncated while mapped"}
		}
		return n, nil
	}
	f.mu.Lock()
	fresh := false
	if f.view == nil {
		base, view, err := f.mapFile()
		if err != nil {
			f.mu.Unlock()
			return 0, err
		}
		f.base, f.view, fresh = base, view, true
		if c != nil {
			f.lruStamp.Store(c.clock.Add(1))
		}
	}
	n, ok := guardedCopy(p, f.view[off:])
	f.mu.Unlock()
	if !ok {
		return 0, f.faulted()
	}
	if fresh && c != nil {
		c.noteMapped(f)
	}
	return n, nil
}

// faulted handles a fault while copying from the mapping: the file shrank under
// it. The mapping is dropped; the next map attempt sees the new size and
// reports the file stale again.
func (f *fileMap) faulted() error {
	if c := f.cache; c != nil {
		c.unmap(f)
	} else {
		f.release()
	}
	return &StaleFileError{Path: f.path, Reason: "truncated while mapped"}
}

// release unmaps the file if it is mapped and reports how many bytes that
// freed.
func (f *fileMap) release() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.base == nil {
		return 0
	}
	n := uint64(len(f.base))
	unix.Munmap(f.base)
	f.base, f.view = nil, nil
	return n
}

func (f *fileMap) mapped() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.base != nil
}

// guardedCopy copies from a file mapping. If the file was truncated under the
// mapping, touching a page past its new end raises SIGBUS; with panic-on-fault
// set that becomes a recoverable panic, reported here as ok == false, instead
// of killing the agent.
func guardedCopy(dst, src []byte) (n int, ok bool) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			var fault interface{ Addr() uintptr }
			if err, isErr := r.(error); isErr && errors.As(err, &fault) {
				n, ok = 0, false
				return
			}
			panic(r)
		}
	}()
	return copy(dst, src), true
}
