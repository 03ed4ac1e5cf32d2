package memimage

import (
	"errors"
	"sync/atomic"
)

// Resident chunks: copies of a file section's bytes in Go memory.
//
// Every read of a file mapping must run under a fault guard (guardedCopy),
// because a file truncated under its mapping raises SIGBUS on the lost pages.
// The guard costs about 6 ns (two runtime calls to switch panic-on-fault and
// a deferred recover), more than a whole 16-byte copy, so small reads of a
// mapping can never come within 2x of a plain copy. Bytes in Go memory cannot
// fault. A Reader therefore copies the 128 KiB chunk around what it reads out
// of the mapping once, under one guard, keeps it with the section, and serves
// small reads from it with a bounds check and a copy (see reader.go).
//
// A chunk holds exactly what a guarded read of the mapping returned when it
// was made, so it is as right as any read of the mapping: the file was
// checked against the section's recorded size, mtime and identity when it
// was mapped. Chunks are dropped with the mapping (cache eviction, a fault),
// and they count against their SectionCache's byte limit. Sections without
// a cache keep their chunks as long as their mapping: at most one copy of
// the bytes Readers touched.

const (
	chunkShift = 17
	chunkSize  = 1 << chunkShift
)

var errNoRoom = errors.New("no room for resident chunks under the cache's limit")

// chunkTable holds a section's resident chunks: entry k copies section
// offsets [k*chunkSize, (k+1)*chunkSize), cut to the section's size.
type chunkTable []atomic.Pointer[[]byte]

// residentChunk returns chunk k of the section's bytes, copying it out of the
// mapping if it is not resident. fresh reports that it was copied just now,
// under the fault guard, so it needs no further check. It returns errNoRoom
// when the section's cache has no room for chunks.
func (f *fileMap) residentChunk(k uint64) (data []byte, fresh bool, err error) {
	if t := f.chunks.Load(); t != nil {
		if b := (*t)[k].Load(); b != nil {
			return *b, false, nil
		}
	}
	if !f.keepsChunks() {
		return nil, false, errNoRoom
	}
	lo := k << chunkShift
	buf := make([]byte, min(chunkSize, f.size-lo))
	if _, err := f.readAt(buf, lo); err != nil {
		return nil, false, err
	}
	f.keepChunk(k, buf)
	return buf, true, nil
}

// keepChunk stores buf as chunk k, if the section is still mapped and its
// cache has room for it beside the section's own mapping. Otherwise the
// caller uses buf once and drops it.
func (f *fileMap) keepChunk(k uint64, buf []byte) {
	c := f.cache
	if c == nil {
		f.mu.Lock()
		f.storeChunkLocked(k, buf)
		f.mu.Unlock()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := uint64(len(buf))
	if !f.inLRU || f.counted+n > c.limit.Load() {
		// Evicted since the read, mapped for that read only (larger than
		// the limit), or no room: keeping it would only make the cache
		// evict this section's own mapping.
		return
	}
	f.mu.Lock()
	stored := f.storeChunkLocked(k, buf)
	f.mu.Unlock()
	if stored {
		f.counted += n
		c.used += n
		c.evictLocked()
	}
}

// storeChunkLocked stores buf as chunk k unless the mapping is gone (its
// chunks went with it) or another reader stored the chunk first.
func (f *fileMap) storeChunkLocked(k uint64, buf []byte) bool {
	if !f.mapped.Load() {
		return false
	}
	t := f.chunks.Load()
	if t == nil {
		nt := make(chunkTable, (f.size+chunkSize-1)>>chunkShift)
		t = &nt
		f.chunks.Store(t)
	}
	if (*t)[k].Load() != nil {
		return false
	}
	(*t)[k].Store(&buf)
	return true
}

// keepsChunks reports whether the section can keep a chunk beside its
// mapping under its cache's limit. When it cannot (a small limit, or 0),
// Readers read it the way Image.Read does rather than copy a whole chunk
// for every window.
func (f *fileMap) keepsChunks() bool {
	c := f.cache
	return c == nil || f.mapLength()+min(chunkSize, f.size) <= c.limit.Load()
}
