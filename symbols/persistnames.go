package symbols

// Demangling is the largest cost of symbolizing C++ after decoding the
// unit itself: the Go demangler takes 10-60 us of CPU for a template
// instance's name, and a run over a C++ program meets thousands of distinct
// names (2,000 in bench/symbolize's generated program: ~100 ms, a third of
// a `symbolize -f -i -C` run of 5,000 addresses). The names a file's
// functions demangle to never change, so files that persist their index
// (persist.go) also keep the names demangled while using them, in a small
// cache file of their own beside the file's main one (so adding names does
// not rewrite inflated sections); later runs load them into the process's
// demangling cache before the first name is needed. Names are added, never
// dropped, while the file stays the same; the cache entry goes with it.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/pcache"
	"github.com/sondedbg/sonde/symbols/internal/demangler"
)

// Version 2: nested templates closed as GNU closes them after an empty pack.
var namesClientID = pcache.ClientID{Name: "symbols.demangled", Version: 2}

const namesSection = "names"

// maxPersistedNames bounds the names a file keeps (and loads): past it, new
// names are demangled each run, as without the cache.
const maxPersistedNames = demangleCacheMax / 2

// nameStore is one file's persisted demangled names and those this run
// added to them.
type nameStore struct {
	once  sync.Once
	cache *pcache.Cache
	key   string
	id    pcache.Identity

	mu    sync.Mutex
	known map[string]bool           // linkage names in the cache file
	fresh map[string]demangleResult // demangled this run, not in the file
	err   error                     // why loading or storing failed (informational)
}

// nameStoreOf returns the name store of d's file, or nil when d's file does
// not persist what it derives.
func (d *dwarfFile) nameStore() *nameStore {
	if d == nil || d.ef == nil || d.ef.persist == nil || d.eager {
		return nil
	}
	p := d.ef.persist
	p.namesOnce.Do(func() {
		key, id := d.ef.identity()
		p.names = &nameStore{cache: p.cache, key: key + "-names", id: id}
	})
	return p.names
}

// load reads the file's persisted names into the process's demangling
// cache, once.
func (s *nameStore) load() {
	s.once.Do(func() {
		cl := &namesClient{}
		f, err := s.cache.Load(s.key, s.id, cl)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.known = map[string]bool{}
		if err != nil {
			if !errors.Is(err, pcache.ErrMissing) {
				s.err = err
			}
			return
		}
		defer f.Close()
		recs, err := decodeNames(cl.data)
		if err != nil {
			s.err = err
			return
		}
		c := &demangleCache
		c.mu.Lock()
		if c.m == nil || len(c.m)+len(recs) > demangleCacheMax {
			c.m = make(map[string]demangleResult, len(recs))
		}
		for _, r := range recs {
			c.m[r.linkage] = r.res
			s.known[r.linkage] = true
		}
		c.mu.Unlock()
	})
}

// demangled is the package's demangled through s: names from the file's
// cache come without demangling, and names demangled now are kept for it.
func (s *nameStore) demangled(linkage string) demangleResult {
	if s == nil {
		return demangled(linkage)
	}
	s.load()
	r := demangled(linkage)
	s.mu.Lock()
	if !s.known[linkage] && len(s.known)+len(s.fresh) < maxPersistedNames {
		if s.fresh == nil {
			s.fresh = map[string]demangleResult{}
		}
		s.fresh[linkage] = r
	}
	s.mu.Unlock()
	return r
}

// flush writes the names demangled this run, merged with those on disk.
func (s *nameStore) flush() {
	if s == nil {
		return
	}
	s.mu.Lock()
	fresh := s.fresh
	s.fresh = nil
	for k := range fresh {
		s.known[k] = true
	}
	s.mu.Unlock()
	if len(fresh) == 0 {
		return
	}
	if err := s.cache.Store(s.key, s.id, &namesClient{fresh: fresh}); err != nil {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
	}
}

// nameRecord is one persisted name.
type nameRecord struct {
	linkage string
	res     demangleResult
}

// namesClient writes the names section: the file's existing records, then
// the fresh ones. A record is the uvarint-prefixed linkage name and binutils'
// spelling, a flag byte (bit 0: the name demangled; bits 1-2: how gdb's
// spelling is stored: 0 a string of its own follows, 1 the same as
// binutils', 2 binutils' from a uvarint offset on, the common case of a
// dropped return type).
type namesClient struct {
	fresh map[string]demangleResult // to write
	data  []byte                    // resurrected
}

func (c *namesClient) ID() pcache.ClientID { return namesClientID }

func (c *namesClient) Size(ctx *pcache.PersistContext) ([]pcache.SectionSpec, any, error) {
	var old []byte
	seen := map[string]bool{}
	for _, s := range ctx.Existing {
		if s.Name != namesSection {
			continue
		}
		recs, err := decodeNames(s.Data)
		if err != nil {
			break // a bad old section is dropped, not merged
		}
		old = s.Data
		for _, r := range recs {
			seen[r.linkage] = true
		}
	}
	keys := make([]string, 0, len(c.fresh))
	for k := range c.fresh {
		if !seen[k] && len(seen)+len(keys) < maxPersistedNames {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys) // deterministic files
	size := len(old)
	for _, k := range keys {
		r := c.fresh[k]
		size += 3*binary.MaxVarintLen64 + len(k) + len(r.full) + 1
		if !strings.HasSuffix(r.full, r.display) {
			size += len(r.display)
		}
	}
	buf := append(make([]byte, 0, size), old...)
	for _, k := range keys {
		buf = appendName(buf, k, c.fresh[k])
	}
	return []pcache.SectionSpec{{Name: namesSection, Size: int64(len(buf)), Align: 8}}, buf, nil
}

func (c *namesClient) Persist(ctx *pcache.PersistContext, i int, w io.Writer, user any) error {
	_, err := w.Write(user.([]byte))
	return err
}

func (c *namesClient) Resurrect(f *pcache.File, secs []pcache.Section) error {
	for _, s := range secs {
		if s.Name == namesSection {
			c.data = s.Data
			return nil
		}
	}
	return errors.New("no names section")
}

const (
	displayOwn    = 0
	displaySame   = 1
	displaySuffix = 2
)

func appendName(b []byte, linkage string, r demangleResult) []byte {
	for _, s := range []string{linkage, r.full} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	flag := byte(0)
	if r.ok {
		flag = 1
	}
	switch {
	case r.display == r.full:
		return append(b, flag|displaySame<<1)
	case strings.HasSuffix(r.full, r.display):
		b = append(b, flag|displaySuffix<<1)
		return binary.AppendUvarint(b, uint64(len(r.full)-len(r.display)))
	}
	b = append(b, flag|displayOwn<<1)
	b = binary.AppendUvarint(b, uint64(len(r.display)))
	return append(b, r.display...)
}

// decodeNames parses a names section. The strings are copied: the cache
// file is unmapped once loaded.
func decodeNames(b []byte) ([]nameRecord, error) {
	var out []nameRecord
	off := 0
	str := func() (string, error) {
		n, k := binary.Uvarint(b[off:])
		if k <= 0 || n > uint64(len(b)-off-k) || n > demangler.MaxOutput {
			return "", fmt.Errorf("names section: bad string at offset %d", off)
		}
		s := string(b[off+k : off+k+int(n)])
		off += k + int(n)
		return s, nil
	}
	for off < len(b) {
		if len(out) >= maxPersistedNames {
			return nil, fmt.Errorf("names section: more than %d names", maxPersistedNames)
		}
		var r nameRecord
		var err error
		if r.linkage, err = str(); err != nil {
			return nil, err
		}
		if r.res.full, err = str(); err != nil {
			return nil, err
		}
		if off >= len(b) || b[off] > 1|displaySuffix<<1 {
			return nil, fmt.Errorf("names section: bad flag at offset %d", off)
		}
		flag := b[off]
		off++
		r.res.ok = flag&1 == 1
		switch flag >> 1 {
		case displaySame:
			r.res.display = r.res.full
		case displaySuffix:
			n, k := binary.Uvarint(b[off:])
			if k <= 0 || n > uint64(len(r.res.full)) {
				return nil, fmt.Errorf("names section: bad display offset at %d", off)
			}
			off += k
			r.res.display = r.res.full[n:]
		default:
			if r.res.display, err = str(); err != nil {
				return nil, err
			}
		}
		out = append(out, r)
	}
	return out, nil
}
