package profiling

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"slices"
	"sort"
	"sync"

	"github.com/sondedbg/sonde/pcache"
	"github.com/sondedbg/sonde/symbols/debugfile"
	"github.com/sondedbg/sonde/unwind"
	"github.com/sondedbg/sonde/unwind/snapshot"
)

// The names of a file's addresses are kept in the persisted cache: the
// first profile of a program pays for its line tables and scope trees (tens
// of milliseconds for a libc with debug information), the next ones read
// the answers. One cache file per binary and naming mode, valid while the
// binary and its debug file are the same (their sizes, times and build-id).

// fileNames is what the cache knows of one file's addresses.
type fileNames struct {
	once   sync.Once
	module string
	key    string // the cache key, "" when the file is not cached (the vDSO)
	id     pcache.Identity
	old    *namesClient // loaded (nil: nothing cached): read-only once once is done
	file   *pcache.File // old's section lies in it, mapped until close

	mu    sync.Mutex
	fresh map[uint64][]Frame // found by this run, to store
}

// maxCachedNames bounds one file's persisted names.
const maxCachedNames = 1 << 18

// cachedNames returns the names the cache has for a module's file, loading
// them on first use.
func (b *Builder) cachedNames(id uint32, proc *snapshot.Process, um *unwind.Module) *fileNames {
	b.fileMu.Lock()
	for int(id) >= len(b.persisted) {
		b.persisted = append(b.persisted, &fileNames{})
	}
	fn := b.persisted[id]
	b.fileMu.Unlock()
	fn.once.Do(func() { b.loadNames(fn, proc, um) })
	return fn
}

func (b *Builder) loadNames(fn *fileNames, proc *snapshot.Process, um *unwind.Module) {
	fn.module = um.Name
	cache := pcache.Default()
	bin := proc.Binary(um)
	if cache == nil || bin == nil || bin.Path() == "" || b.opts.Symbols != nil {
		return // in memory (the vDSO), or debug files from unusual places
	}
	ef := bin.ELF()
	if ef == nil {
		return
	}
	buildID, _ := debugfile.BuildID(ef)
	id, err := pcache.StatIdentity(bin.Path(), buildID)
	if err != nil {
		return
	}
	// The key names the file, the mode and the debug file the names came
	// from: installing debug information later gives other names.
	h := sha256.New()
	mode := "inline"
	if b.opts.NoInline {
		mode = "no-inline"
	}
	h.Write([]byte(bin.Path() + "\x00" + mode + "\x00" + bin.DebugFile()))
	if dbg := bin.DebugFile(); dbg != "" && dbg != bin.Path() {
		if st, err := os.Stat(dbg); err == nil {
			binary.Write(h, binary.LittleEndian, [2]int64{st.Size(), st.ModTime().UnixNano()})
		}
	}
	sum := h.Sum(nil)
	fn.key, fn.id = "perfnames-"+hex.EncodeToString(sum[:12]), id
	cl := &namesClient{module: um.Name}
	if f, err := cache.Load(fn.key, fn.id, cl); err == nil {
		// The client decodes an address's frames when asked, from
		// the section where it is mapped: a file's cache holds the
		// names of every program that ran on it, and building them all
		// (a libc's) was ~5 ms of the first samples' wait.
		fn.old, fn.file = cl, f
	}
}

// lookup returns the cached frames of an address.
func (fn *fileNames) lookup(key uint64) ([]Frame, bool) {
	if fn.old == nil {
		return nil, false
	}
	return fn.old.lookup(key)
}

// close unmaps the cache file (after store).
func (fn *fileNames) close() {
	if fn.file != nil {
		fn.file.Close()
		fn.file = nil
	}
}

// add records frames this run found, for store.
func (fn *fileNames) add(key uint64, names []Frame) {
	if fn.key == "" {
		return
	}
	fn.mu.Lock()
	if fn.fresh == nil {
		fn.fresh = map[uint64][]Frame{}
	}
	if fn.old.count()+len(fn.fresh) < maxCachedNames {
		fn.fresh[key] = names
	}
	fn.mu.Unlock()
}

// storeNames writes the names each file gained during the run.
func (b *Builder) storeNames() {
	cache := pcache.Default()
	if cache == nil {
		return
	}
	b.fileMu.Lock()
	files := append([]*fileNames(nil), b.persisted...)
	b.fileMu.Unlock()
	for _, fn := range files {
		fn.mu.Lock()
		fresh := fn.fresh
		fn.fresh = nil
		fn.mu.Unlock()
		if len(fresh) == 0 || fn.key == "" {
			continue
		}
		all := fn.old.all()
		if all == nil {
			all = make(map[uint64][]Frame, len(fresh))
		}
		for k, v := range fresh {
			all[k] = v
		}
		cache.Store(fn.key, fn.id, &namesClient{module: fn.module, names: all})
	}
}

// closeNames unmaps the names' cache files.
func (b *Builder) closeNames() {
	b.fileMu.Lock()
	defer b.fileMu.Unlock()
	for _, fn := range b.persisted {
		fn.close()
	}
}

// namesClient persists one file's names as one section: u32 count, then
// per address its u64 key and u32 frame count, per frame its function and
// file (u32 length and bytes), u32 line, u8 flags (1 inlined, 2 has an
// offset) and u64 offset.
type namesClient struct {
	module string
	names  map[uint64][]Frame // to store (Size)
	// A loaded section: the sorted keys and where each one's frame
	// count lies in data (checked whole by Resurrect); the frames are
	// decoded by lookup, with one copy of each string.
	data []byte
	keys []uint64
	offs []uint32
	mu   sync.Mutex
	strs map[string]string
}

// count is how many addresses the loaded section holds.
func (c *namesClient) count() int {
	if c == nil {
		return 0
	}
	return len(c.keys)
}

// lookup decodes the frames of an address the loaded section holds.
func (c *namesClient) lookup(key uint64) ([]Frame, bool) {
	i, ok := slices.BinarySearch(c.keys, key)
	if !ok {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frames(c.offs[i]), true
}

// frames decodes the frames whose count lies at off (under mu); Resurrect
// checked every length.
func (c *namesClient) frames(off uint32) []Frame {
	d := nameDecoder{b: c.data, p: int(off)}
	str := func() string {
		b := d.bytes()
		if v, ok := c.strs[string(b)]; ok {
			return v
		}
		v := string(b) // copied: the section is unmapped at Close
		c.strs[v] = v
		return v
	}
	frames := make([]Frame, d.u32())
	for j := range frames {
		f := &frames[j]
		f.Function, f.File = str(), str()
		f.Line = int(d.u32())
		f.Column, f.StartLine = int(d.u32()), int(d.u32())
		flags := d.u8()
		f.Inlined, f.HasOffset = flags&1 != 0, flags&2 != 0
		f.Offset = d.u64()
		f.Module = c.module
	}
	return frames
}

// all decodes every address of the loaded section (nil when none is).
func (c *namesClient) all() map[uint64][]Frame {
	if c == nil || c.keys == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make(map[uint64][]Frame, len(c.keys))
	for i, k := range c.keys {
		names[k] = c.frames(c.offs[i])
	}
	return names
}

func (c *namesClient) ID() pcache.ClientID { return pcache.ClientID{Name: "perfnames", Version: 6} } // 5: GNU ">>" after empty packs; 6: perf's alias choice by demangled length, zero sizes fixed up

func (c *namesClient) Size(*pcache.PersistContext) ([]pcache.SectionSpec, any, error) {
	names := c.names
	if names == nil {
		names = c.all()
	}
	keys := make([]uint64, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, uint32(len(keys)))
	for _, k := range keys {
		frames := names[k]
		b = binary.LittleEndian.AppendUint64(b, k)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(frames)))
		for _, f := range frames {
			b = appendString(b, f.Function)
			b = appendString(b, f.File)
			b = binary.LittleEndian.AppendUint32(b, uint32(f.Line))
			b = binary.LittleEndian.AppendUint32(b, uint32(f.Column))
			b = binary.LittleEndian.AppendUint32(b, uint32(f.StartLine))
			var flags byte
			if f.Inlined {
				flags |= 1
			}
			if f.HasOffset {
				flags |= 2
			}
			b = append(b, flags)
			b = binary.LittleEndian.AppendUint64(b, f.Offset)
		}
	}
	return []pcache.SectionSpec{{Name: "names", Size: int64(len(b)), Align: 8}}, b, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func (c *namesClient) Persist(_ *pcache.PersistContext, _ int, w io.Writer, user any) error {
	_, err := w.Write(user.([]byte))
	return err
}

var errNamesSection = errors.New("perfnames section does not add up")

// Resurrect checks the section, every length against what is left, and
// indexes its addresses; lookup decodes their frames when asked.
func (c *namesClient) Resurrect(_ *pcache.File, secs []pcache.Section) error {
	d := nameDecoder{b: secs[0].Data}
	n := d.u32()
	if d.bad || uint64(n) > uint64(len(d.b))/12 {
		return errNamesSection
	}
	keys, offs := make([]uint64, 0, n), make([]uint32, 0, n)
	if uint64(len(d.b)) > 1<<32-1 {
		return errNamesSection
	}
	var prev uint64
	for i := uint32(0); i < n && !d.bad; i++ {
		key := d.u64()
		if i > 0 && key <= prev {
			return errNamesSection // written sorted, each once
		}
		prev = key
		off := d.p
		nf := d.u32()
		if uint64(nf) > uint64(len(d.b)-d.p)/29 {
			return errNamesSection
		}
		for j := uint32(0); j < nf && !d.bad; j++ {
			d.bytes() // function
			d.bytes() // file
			d.u32()   // line
			d.u32()   // column
			d.u32()   // start line
			if d.u8()&^3 != 0 {
				return errNamesSection // flags
			}
			d.u64() // offset
		}
		keys, offs = append(keys, key), append(offs, uint32(off))
	}
	if d.bad || d.p != len(d.b) {
		return errNamesSection
	}
	c.data, c.keys, c.offs, c.strs = d.b, keys, offs, map[string]string{}
	return nil
}

// nameDecoder reads the section, remembering a read past its end.
type nameDecoder struct {
	b   []byte
	p   int
	bad bool
}

func (d *nameDecoder) need(n int) bool {
	if d.bad || n > len(d.b)-d.p {
		d.bad = true
		return false
	}
	return true
}

func (d *nameDecoder) u8() byte {
	if !d.need(1) {
		return 0
	}
	d.p++
	return d.b[d.p-1]
}

func (d *nameDecoder) u32() uint32 {
	if !d.need(4) {
		return 0
	}
	d.p += 4
	return binary.LittleEndian.Uint32(d.b[d.p-4:])
}

func (d *nameDecoder) u64() uint64 {
	if !d.need(8) {
		return 0
	}
	d.p += 8
	return binary.LittleEndian.Uint64(d.b[d.p-8:])
}

// bytes returns a length-prefixed string's bytes, in the section.
func (d *nameDecoder) bytes() []byte {
	n := int(d.u32())
	if !d.need(n) {
		return nil
	}
	d.p += n
	return d.b[d.p-n : d.p]
}
