package symbols

// Compressed debug sections cost more to inflate than everything else a
// cold `sonde stack` does (libc's separate debug file: 3.8 MB of zlib
// streams inflate to 10 MB in ~60-150 ms; the rest of a stack of 8 threads
// takes a few ms). gdb and eu-stack pay this on every run. So the first use
// of a compressed section of a large file starts inflating all of that
// file's compressed debug sections, in parallel, the largest first, and
// waits only for the one it needs (the rest are ready by the time a lookup
// reaches them); once the compile-unit index is built they are persisted,
// in the background, in a pcache file keyed by the file's identity, and
// later runs map that file and read the sections in place. The pcache core
// validates the whole file (owner, size, version, checksums, source
// identity) before these bytes are used; a stale or damaged entry is
// ignored and rebuilt. A section inflated later (one a cache file lacks)
// is added to the file at close.

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

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
	// inflating are the sections being inflated in the background after a
	// miss; fresh are those inflated in this run and not yet written, which
	// the first flush (when the compile-unit index is built, so one write
	// holds both) or close writes.
	inflating map[string]*inflation
	unstored  []string // of inflating, the sections no flush has taken yet
	fresh     map[string][]byte
	storing   sync.WaitGroup // a write in the background (flush)
	loaded    bool           // secs came from a valid cache file
	err       error          // why the cache could not be used or written (informational)

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

// inflation is one section being inflated in the background.
type inflation struct {
	done chan struct{} // closed when data and err are set
	data []byte
	err  error
}

// lookup returns section s from the cache file or from its inflation in the
// background (waiting for it), loading the cache file, or starting those
// inflations, on the first call; false when s must be inflated by the
// caller (and then handed to added, to be persisted).
func (p *persistState) lookup(e *elfFile, s *elf.Section) ([]byte, bool) {
	p.ensure(e)
	p.mu.Lock()
	b, ok := p.secs[s.Name]
	in := p.inflating[s.Name]
	p.mu.Unlock()
	if ok || in == nil {
		return b, ok
	}
	<-in.done
	return in.data, in.err == nil // on an error the caller inflates again and reports it
}

// added records section s, inflated by the caller after a miss, to be
// persisted.
func (p *persistState) added(s *elf.Section, data []byte) {
	p.mu.Lock()
	if p.fresh == nil {
		p.fresh = map[string][]byte{}
	}
	p.fresh[s.Name] = data
	p.mu.Unlock()
}

// fill loads the cache file of e and starts inflating, in the background,
// the persistable sections it lacks (all of them when there is no valid
// file): whoever needs one waits for it in lookup.
func (p *persistState) fill(e *elfFile) {
	key, id := e.identity()
	cl := &inflatedClient{ef: e}
	ic := &indexClient{}
	f, err := p.cache.Load(key, id, cl, ic)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.file, p.secs, p.index, p.loaded = f, cl.got, ic.got, cl.got != nil
	} else {
		p.err = err
	}
	if p.secs != nil {
		return // a section the file lacks is inflated when needed
	}
	var todo []*elf.Section
	for _, s := range e.f.Sections {
		if persistable(s) {
			todo = append(todo, s)
		}
	}
	// In the order a lookup needs them: .debug_info, which the first lookup
	// waits for, then what the unit index reads, then line tables, then the
	// rest (location lists, for arguments), the largest first.
	sort.SliceStable(todo, func(i, j int) bool {
		ri, rj := inflateRank(todo[i].Name), inflateRank(todo[j].Name)
		if ri != rj {
			return ri < rj
		}
		return todo[i].FileSize > todo[j].FileSize
	})
	p.inflating = make(map[string]*inflation, len(todo))
	ins := make([]*inflation, len(todo))
	for i, s := range todo {
		ins[i] = &inflation{done: make(chan struct{})}
		p.inflating[s.Name] = ins[i]
		p.unstored = append(p.unstored, s.Name)
	}
	// A worker per CPU takes the sections in that order.
	var next atomic.Int32
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		go func() {
			for i := int(next.Add(1)) - 1; i < len(todo); i = int(next.Add(1)) - 1 {
				in := ins[i]
				in.data, in.err = e.inflate(todo[i])
				close(in.done)
			}
		}()
	}
}

// inflateRank orders sections for inflation after a miss (fill).
func inflateRank(name string) int {
	if strings.HasPrefix(name, ".zdebug_") {
		name = ".debug_" + name[len(".zdebug_"):]
	}
	switch name {
	case ".debug_info":
		return 0
	case ".debug_abbrev", ".debug_aranges", ".debug_str", ".debug_line_str", ".debug_str_offsets",
		".debug_rnglists", ".debug_ranges", ".debug_addr":
		return 1
	case ".debug_line":
		return 2
	}
	return 3
}

// flush writes, in the background, what this run inflated and, when index
// is not nil, that compile-unit index, in one store (wait waits for it).
// The sections being inflated in the background are written once all are
// done.
func (p *persistState) flush(e *elfFile, index *dwarfFile) {
	p.mu.Lock()
	inflating := make([]*inflation, len(p.unstored))
	names := p.unstored
	for i, name := range names {
		inflating[i] = p.inflating[name]
	}
	p.unstored = nil
	fresh := p.fresh
	p.fresh = nil
	p.mu.Unlock()
	if len(inflating) == 0 && len(fresh) == 0 && index == nil {
		return
	}
	p.storing.Add(1)
	backgroundWrites.Add(1)
	go func() {
		defer backgroundWrites.Done()
		defer p.storing.Done()
		if fresh == nil {
			fresh = map[string][]byte{}
		}
		for i, in := range inflating {
			<-in.done
			if in.err == nil {
				fresh[names[i]] = in.data
			}
		}
		var clients []pcache.Client
		if len(fresh) > 0 {
			clients = append(clients, &inflatedClient{ef: e, secs: fresh})
		}
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
	}()
}

// backgroundWrites counts the cache writes under way in the process.
var backgroundWrites sync.WaitGroup

// WaitPersisted waits for the persisted-cache writes under way (started in
// the background once a file's unit index is built): a command-line run
// calls it before exiting, so the next run finds the cache filled.
func WaitPersisted() { backgroundWrites.Wait() }

// wait waits for a write flush started.
func (p *persistState) wait() { p.storing.Wait() }

func (p *persistState) close(e *elfFile) {
	p.names.flush()
	p.wait()
	p.flush(e, nil) // sections inflated since (or without) the index
	p.wait()
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

// Size lists the sections to write: this run's and those already in the
// file on disk (a run that inflated one more section keeps the others).
func (c *inflatedClient) Size(ctx *pcache.PersistContext) ([]pcache.SectionSpec, any, error) {
	all := make(map[string][]byte, len(c.secs)+len(ctx.Existing))
	for _, s := range ctx.Existing {
		all[s.Name] = s.Data
	}
	for name, b := range c.secs {
		all[name] = b
	}
	var specs []pcache.SectionSpec
	var data [][]byte
	for _, s := range c.ef.f.Sections { // section order: deterministic files
		if b, ok := all[s.Name]; ok && persistable(s) && uint64(len(b)) == c.ef.declaredSize(s) {
			specs = append(specs, pcache.SectionSpec{Name: s.Name, Size: int64(len(b)), Align: 64})
			data = append(data, b)
		}
	}
	return specs, data, nil
}

func (c *inflatedClient) Persist(ctx *pcache.PersistContext, i int, w io.Writer, user any) error {
	_, err := w.Write(user.([][]byte)[i])
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
