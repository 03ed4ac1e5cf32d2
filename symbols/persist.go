package symbols

// Compressed debug sections cost more to inflate than everything else a
// cold `sonde stack` does (libc's separate debug file: 3.8 MB of zlib
// streams inflate to 10 MB in ~60-150 ms; the rest of a stack of 8 threads
// takes a few ms). gdb and eu-stack pay this on every run. So the first use
// of a compressed section of a large file inflates all of that file's
// compressed debug sections at once (in parallel) and persists them in a
// pcache file keyed by the file's identity; later runs map that file and
// read the sections in place. The pcache core validates the whole file
// (owner, size, version, checksums, source identity) before these bytes are
// used; a stale or damaged entry is ignored and rebuilt.

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/sondedbg/sonde/pcache"
)

// persistClientID names the sections this package writes to cache files:
// the inflated contents of compressed ELF sections, by section name.
var persistClientID = pcache.ClientID{Name: "symbols.inflated", Version: 1}

// minPersistSize: files whose compressed debug sections are smaller than
// this inflate in about a millisecond, less than a cache file costs.
var minPersistSize uint64 = 128 << 10

// persistState is the persisted-cache side of one elfFile.
type persistState struct {
	cache *pcache.Cache
	once  sync.Once

	mu    sync.Mutex
	file  *pcache.File      // the mapped cache file, or nil
	secs  map[string][]byte // inflated sections by name (mapped or in memory)
	index map[string][]byte // the persisted compile-unit index (persistindex.go)
	// pending holds sections inflated on a miss until they are written,
	// together with the compile-unit index when one is built (one write of
	// the file instead of two), or at close.
	pending *inflatedClient
	loaded  bool  // secs came from a valid cache file
	err     error // why the cache could not be used or written (informational)

	namesOnce sync.Once
	names     *nameStore // demangled names (persistnames.go), made on first use
}

// minIndexedInfo: files with less .debug_info than this index their units
// in well under a millisecond; larger ones persist the index.
var minIndexedInfo uint64 = 1 << 20

// enablePersist turns the persisted cache on for ef when it is worth it: a
// file opened from a path whose compressed debug sections, or whose
// .debug_info, are large.
func (e *elfFile) enablePersist(c *pcache.Cache) {
	if c == nil || e.st == nil {
		return
	}
	var compressed, info uint64
	for _, s := range e.f.Sections {
		if persistable(s) {
			compressed += s.FileSize
		}
		if s.Name == ".debug_info" || s.Name == ".zdebug_info" {
			info = e.declaredSize(s)
		}
	}
	if (compressed == 0 || compressed < minPersistSize) && (info == 0 || info < minIndexedInfo) {
		return
	}
	e.persist = &persistState{cache: c}
}

func (p *persistState) setErr(err error) {
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
}

// ensure loads the cache file (or fills it) once.
func (p *persistState) ensure(e *elfFile) { p.once.Do(func() { p.fill(e) }) }

// persistable reports whether section s is one the cache keeps.
func persistable(s *elf.Section) bool {
	if !isCompressed(s) {
		return false
	}
	n := s.Name
	return len(n) > 7 && (n[:7] == ".debug_" || len(n) > 8 && n[:8] == ".zdebug_")
}

// identity returns the pcache key and identity of ef's file. The key has
// the size beside the build-id because a binary and its separate debug file
// share their build-id; files without one are keyed by their path.
func (e *elfFile) identity() (string, pcache.Identity) {
	id := pcache.Identity{Size: e.st.Size(), ModTime: e.st.ModTime().UnixNano()}
	var key string
	if bid := buildID(e.f); len(bid) > 0 && len(bid) <= 64 {
		id.BuildID = bid
		key = fmt.Sprintf("dwarf-%x-%d", bid, id.Size)
	} else {
		abs, _ := filepath.Abs(e.name)
		sum := sha256.Sum256([]byte(abs))
		key = fmt.Sprintf("dwarf-path-%s-%d", hex.EncodeToString(sum[:10]), id.Size)
	}
	return key, id
}

// buildID returns the GNU build-id of f, or nil.
func buildID(f *elf.File) []byte {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		for len(data) >= 12 {
			nsz, dsz, typ := le32(data), le32(data[4:]), le32(data[8:])
			nend := 12 + (uint64(nsz)+3)&^3
			dend := nend + (uint64(dsz)+3)&^3
			if dend > uint64(len(data)) {
				break
			}
			if typ == 3 && nsz == 4 && string(data[12:16]) == "GNU\x00" {
				return append([]byte(nil), data[nend:nend+uint64(dsz)]...)
			}
			data = data[dend:]
		}
	}
	return nil
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// lookup returns section s from the cache, loading the cache file, or
// filling it, on the first call.
func (p *persistState) lookup(e *elfFile, s *elf.Section) ([]byte, bool) {
	p.ensure(e)
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.secs[s.Name]
	return b, ok
}

// fill loads the cache file of e or, when there is no valid one (or it
// lacks the inflated sections), inflates every persistable section, to be
// written by flush.
func (p *persistState) fill(e *elfFile) {
	key, id := e.identity()
	cl := &inflatedClient{ef: e}
	ic := &indexClient{}
	f, err := p.cache.Load(key, id, cl, ic)
	p.mu.Lock()
	if err == nil {
		p.file, p.secs, p.index, p.loaded = f, cl.got, ic.got, cl.got != nil
	} else {
		p.err = err
	}
	p.mu.Unlock()
	if p.secs != nil || !e.hasPersistable() {
		return
	}
	secs, err := e.inflateAll()
	if err != nil {
		// Leave it to lazy inflation, which reports the bad section.
		p.setErr(err)
		return
	}
	cl.secs = secs
	p.mu.Lock()
	p.secs, p.pending = secs, cl
	p.mu.Unlock()
}

// flush writes the pending inflated sections and, when index is not nil,
// that compile-unit index, in one store.
func (p *persistState) flush(e *elfFile, index *dwarfFile) {
	p.mu.Lock()
	var clients []pcache.Client
	if p.pending != nil {
		clients = append(clients, p.pending)
		p.pending = nil
	}
	p.mu.Unlock()
	if index != nil {
		clients = append(clients, &indexClient{d: index})
	}
	if len(clients) == 0 {
		return
	}
	key, id := e.identity()
	if err := p.cache.Store(key, id, clients...); err != nil {
		p.setErr(err)
	}
}

// hasPersistable reports whether e has compressed sections to persist.
func (e *elfFile) hasPersistable() bool {
	for _, s := range e.f.Sections {
		if persistable(s) {
			return true
		}
	}
	return false
}

// inflateAll inflates every persistable section of e, in parallel: each is
// its own zlib stream.
func (e *elfFile) inflateAll() (map[string][]byte, error) {
	var idx []int
	for i, s := range e.f.Sections {
		if persistable(s) {
			idx = append(idx, i)
		}
	}
	out := make([][]byte, len(idx))
	errs := make([]error, len(idx))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for j, i := range idx {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[j], errs[j] = e.inflate(e.f.Sections[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	m := make(map[string][]byte, len(idx))
	for j, i := range idx {
		m[e.f.Sections[i].Name] = out[j]
	}
	return m, nil
}

func (p *persistState) close(e *elfFile) {
	p.names.flush()
	p.flush(e, nil)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.file != nil {
		p.file.Close()
		p.file = nil
	}
	p.secs = nil
}

// inflatedClient is the pcache client for a file's inflated sections.
type inflatedClient struct {
	ef   *elfFile
	secs map[string][]byte // to persist
	got  map[string][]byte // resurrected
}

func (c *inflatedClient) ID() pcache.ClientID { return persistClientID }

func (c *inflatedClient) Size(ctx *pcache.PersistContext) ([]pcache.SectionSpec, any, error) {
	var specs []pcache.SectionSpec
	var names []string
	for _, s := range c.ef.f.Sections { // section order: deterministic files
		if b, ok := c.secs[s.Name]; ok {
			specs = append(specs, pcache.SectionSpec{Name: s.Name, Size: int64(len(b)), Align: 64})
			names = append(names, s.Name)
		}
	}
	return specs, names, nil
}

func (c *inflatedClient) Persist(ctx *pcache.PersistContext, i int, w io.Writer, user any) error {
	_, err := w.Write(c.secs[user.([]string)[i]])
	return err
}

// Resurrect checks every persisted section against the file's headers (the
// core has checked that the file is whole and derived from this file).
func (c *inflatedClient) Resurrect(f *pcache.File, secs []pcache.Section) error {
	got := make(map[string][]byte, len(secs))
	for _, s := range secs {
		i := c.ef.sectionIndex(s.Name)
		if i < 0 || c.ef.f.Sections[i].Name != s.Name || !persistable(c.ef.f.Sections[i]) {
			return fmt.Errorf("section %s is not a compressed section of %s", s.Name, c.ef.name)
		}
		if want := c.ef.declaredSize(c.ef.f.Sections[i]); want != uint64(len(s.Data)) {
			return fmt.Errorf("section %s: %d bytes, the file says %d", s.Name, len(s.Data), want)
		}
		got[s.Name] = s.Data
	}
	c.got = got
	return nil
}
