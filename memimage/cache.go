package memimage

import (
	"sync"
	"sync/atomic"
)

// SectionID names a section at a load address in a SectionCache. IDs start at
// 1 and never change or get reused; 0 means "no ID" (sections added to an
// image directly, and bytes served by the fallback).
type SectionID uint32

// NoLimit as a SectionCache limit keeps every section mapped once read.
const NoLimit = ^uint64(0)

// A SectionCache shares file sections between images (one per process, say)
// so that each file range is mapped once, hands out stable SectionIDs so that
// readers can attribute bytes to files, and keeps at most a given number of
// bytes mapped, unmapping the least recently read sections first. It is safe
// for concurrent use.
type SectionCache struct {
	limit atomic.Uint64
	clock atomic.Uint64 // LRU clock; see fileMap.readAt

	mu       sync.Mutex
	entries  []cacheEntry // entries[id-1]
	byKey    map[cacheKey]SectionID
	sections map[fileRange]*Section
	lru      []*fileMap // mapped sections, in no particular order
	used     uint64     // bytes mapped by the sections in lru
}

type cacheEntry struct {
	section *Section
	vaddr   uint64
}

type fileRange struct {
	path         string
	offset, size uint64
}

type cacheKey struct {
	fileRange
	vaddr uint64
}

// NewSectionCache returns an empty cache that keeps at most limit bytes
// mapped, counting the resident copies Readers make (see Reader). As in
// libipt, a limit of 0 keeps nothing mapped between reads (each read maps and
// unmaps); NoLimit keeps everything. An unmapped section keeps
// its address range reserved (inaccessible, costing address space but no
// memory) so that it can be read without locks; the range is released when
// the section becomes unreachable.
func NewSectionCache(limit uint64) *SectionCache {
	c := &SectionCache{byKey: map[cacheKey]SectionID{}, sections: map[fileRange]*Section{}}
	c.limit.Store(limit)
	return c
}

// AddFile returns the ID of size bytes of the file at path from offset, loaded
// at vaddr (see NewFileSection for how size is cut). Adding the same range at
// the same address again returns the same ID, unless the file changed since:
// then the new contents get a new section and a new ID, and the old ID keeps
// reporting the old file as stale.
func (c *SectionCache) AddFile(path string, offset, size, vaddr uint64) (SectionID, error) {
	fr := fileRange{path, offset, size}
	key := cacheKey{fr, vaddr}
	st, err := statFile(path)
	if err != nil {
		return 0, &SectionError{Name: path, Offset: offset, Size: size, Err: err}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sec := c.sections[fr]
	if sec != nil && sec.file.staleness(st) == nil {
		if id, ok := c.byKey[key]; ok {
			return id, nil
		}
	} else {
		sec, err = newFileSection(path, offset, size, c)
		if err != nil {
			return 0, err
		}
		c.sections[fr] = sec
	}
	if len(c.entries) >= int(^SectionID(0))-1 {
		return 0, &SectionError{Name: path, Offset: offset, Size: size, Err: errTooManySections}
	}
	c.entries = append(c.entries, cacheEntry{sec, vaddr})
	id := SectionID(len(c.entries))
	c.byKey[key] = id
	return id, nil
}

// Section returns the section with the given ID and its load address.
func (c *SectionCache) Section(id SectionID) (*Section, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id == 0 || int(id) > len(c.entries) {
		return nil, 0, &UnknownIDError{ID: id}
	}
	e := c.entries[id-1]
	return e.section, e.vaddr, nil
}

// SetLimit changes how many bytes may stay mapped, unmapping least recently
// read sections at once if the cache is now over the limit.
func (c *SectionCache) SetLimit(limit uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit.Store(limit)
	c.evictLocked()
}

// MappedBytes reports how many bytes the cache's sections keep mapped,
// counting the resident copies Readers made of them.
func (c *SectionCache) MappedBytes() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// noteMapped records that f has just been mapped and evicts older sections if
// that took the cache over its limit.
func (c *SectionCache) noteMapped(f *fileMap) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.inLRU || !f.mapped.Load() {
		return // someone else registered it, or a fault already dropped it
	}
	f.inLRU = true
	c.lru = append(c.lru, f)
	f.counted = f.mapLength()
	c.used += f.counted
	c.evictLocked()
}

func (c *SectionCache) evictLocked() {
	limit := c.limit.Load()
	for c.used > limit && len(c.lru) > 0 {
		victim := 0
		for i, f := range c.lru {
			if f.lruStamp.Load() < c.lru[victim].lruStamp.Load() {
				victim = i
			}
		}
		c.dropLocked(victim)
	}
}

func (c *SectionCache) dropLocked(i int) {
	f := c.lru[i]
	last := len(c.lru) - 1
	c.lru[i] = c.lru[last]
	c.lru[last] = nil
	c.lru = c.lru[:last]
	f.inLRU = false
	f.unmap()
	c.used -= f.counted
	f.counted = 0
}

// forget removes f, already unmapped after a fault, from the LRU.
func (c *SectionCache) forget(f *fileMap) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, g := range c.lru {
		if g == f {
			c.dropLocked(i)
			return
		}
	}
}
