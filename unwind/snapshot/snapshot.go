package snapshot

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/sondedbg/sonde/memimage"
	"github.com/sondedbg/sonde/procmaps"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/unwind"
)

// Options configure a Process.
type Options struct {
	// NoSymbols skips symbol files: modules get their unwind tables from the
	// mapped files only (no separate debug files) and SymbolInfo knows nothing.
	// For pc-only walks (profilers) that symbolize later.
	NoSymbols bool
	// Symbols tells how to find debug information (nil: gdb's places).
	Symbols *symbols.Options
	// Objects, when set, shares opened files with other Processes (and owns
	// them: Process.Close leaves them open, Objects.Close closes them). An
	// in-memory image (Mapping.Data) is keyed by its Name.
	Objects *Objects
}

// Process is one address space: its modules and the image that serves memory
// outside the stack copies. Safe for concurrent use by many Threads.
type Process struct {
	image *memimage.Image
	asid  memimage.ASID
	opts  Options
	mods  []*module // sorted by start, disjoint
}

// module is one loaded ELF object: the engine's module (shared by every walk,
// so its CFI row cache is too) and the object's symbols, opened on first use.
type module struct {
	um   unwind.Module
	path string
	data []byte // in-memory image (vDSO)
	once sync.Once
	bin  *symbols.Binary
	err  error
}

// New makes a Process whose memory image holds the given mappings' files as
// sections (in-memory images, e.g. the vDSO, as memory sections). Mappings of
// one file form one module; its load bias comes from the file's program
// headers.
func New(mappings []Mapping, opts *Options) (*Process, error) {
	im := memimage.New("snapshot")
	for _, m := range mappings {
		var sec *memimage.Section
		var err error
		switch {
		case m.Data != nil:
			sec, err = memimage.NewMemorySection(m.Name, m.Data)
		case m.Path != "" && opts != nil && opts.Objects != nil:
			sec, err = opts.Objects.section(m.Path, m.Offset, m.End-m.Start)
		case m.Path != "":
			sec, err = memimage.NewFileSection(m.Path, m.Offset, m.End-m.Start)
		default:
			continue
		}
		if err == nil {
			err = im.Add(sec, memimage.AnyASID, m.Start)
		}
		if err != nil {
			// A file that cannot be mapped only costs its code bytes: the
			// engine's checks weaken, the walk goes on.
			continue
		}
	}
	return NewWithImage(im, memimage.AnyASID, mappings, opts)
}

// NewWithImage makes a Process over an image the caller made (a core's
// segments over its files, or live memory as the fallback): the mappings only
// define the modules.
func NewWithImage(im *memimage.Image, asid memimage.ASID, mappings []Mapping, opts *Options) (*Process, error) {
	p := &Process{image: im, asid: asid}
	if opts != nil {
		p.opts = *opts
	}
	// Mappings of one file with one load bias form a module; the same file
	// mapped again elsewhere (a reader's mmap of it) is another. So does
	// the part of a file beyond another file's mapping inside its range:
	// `perf inject --jit` maps node's builtins (jitted-PID-N.so) inside
	// node's own text, and one module spanning both would hide them or,
	// clipped, the text after them.
	type key struct {
		name string
		bias uint64
	}
	byKey := map[key]int{}
	var specs []moduleSpec
	for _, m := range mappings {
		name := m.Path
		if name == "" {
			if m.Data == nil {
				continue
			}
			name = m.Name
		}
		bias, err := p.loadBias(m)
		if err != nil {
			continue // not an ELF object (a font, a locale archive)
		}
		k := key{name, bias}
		i, ok := byKey[k]
		if !ok || i != len(specs)-1 {
			i = len(specs)
			byKey[k] = i
			spec := moduleSpec{path: m.Path, data: m.Data, name: m.Name, start: m.Start, end: m.End, bias: bias}
			if spec.name == "" {
				spec.name = m.Path
			}
			specs = append(specs, spec)
		}
		specs[i].start = min(specs[i].start, m.Start)
		specs[i].end = max(specs[i].end, m.End)
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].start < specs[j].start })
	// Overlapping modules (a bogus list) would make lookups ambiguous: the
	// later one loses its overlap by starting where the previous ends.
	for i := 1; i < len(specs); i++ {
		if prev := specs[i-1]; specs[i].start < prev.end {
			specs[i].start = min(prev.end, specs[i].end)
		}
	}
	p.mods = make([]*module, len(specs))
	for i, spec := range specs {
		if p.opts.Objects != nil {
			p.mods[i] = p.opts.Objects.module(spec)
		} else {
			p.mods[i] = spec.newModule()
		}
	}
	return p, nil
}

// moduleSpec is what makes a module: its file, where it lies and its bias.
type moduleSpec struct {
	path       string
	data       []byte
	name       string
	start, end uint64
	bias       uint64
}

func (spec moduleSpec) newModule() *module {
	mod := &module{path: spec.path, data: spec.data}
	mod.um = unwind.Module{Name: spec.name, Start: spec.start, End: spec.end, Bias: spec.bias}
	mod.um.Client = mod
	return mod
}

// loadBias finds the runtime-minus-link-time difference of a mapping from the
// PT_LOAD segment that covers its file offset.
func (p *Process) loadBias(m Mapping) (uint64, error) {
	var progs []elf.ProgHeader
	if p.opts.Objects != nil {
		var err error
		if progs, err = p.opts.Objects.get(objectKey(m)).programs(m.Path, m.Data); err != nil {
			return 0, err
		}
	} else {
		f, err := openELF(m.Path, m.Data)
		if err != nil {
			return 0, err
		}
		progs = procmaps.Progs(f)
		f.Close()
	}
	if bias, ok := procmaps.LoadBias(progs, m.Start, m.Offset); ok {
		return bias, nil
	}
	return 0, errNoSegment
}

var errNoSegment = errors.New("snapshot: no PT_LOAD segment covers the mapping's offset")

// Image returns the memory image behind the process (add sections to it for
// more memory, e.g. heap copies).
func (p *Process) Image() *memimage.Image { return p.image }

// Modules returns the engine modules of the process, by address.
func (p *Process) Modules() []*unwind.Module {
	out := make([]*unwind.Module, len(p.mods))
	for i, m := range p.mods {
		out[i] = &m.um
	}
	return out
}

// objectKey names a mapping's file in Objects.
func objectKey(m Mapping) string {
	if m.Data != nil {
		return "\x00" + m.Name
	}
	return m.Path
}

// Close releases the modules' symbol files (those of Options.Objects stay
// with it).
func (p *Process) Close() error {
	if p.opts.Objects != nil {
		return nil
	}
	for _, m := range p.mods {
		if m.bin != nil {
			m.bin.Close()
		}
	}
	return nil
}

// LookupModule implements unwind.LookupIP.
func (p *Process) LookupModule(pc uint64) (*unwind.Module, error) {
	i := sort.Search(len(p.mods), func(i int) bool { return p.mods[i].um.End > pc })
	if i == len(p.mods) || pc < p.mods[i].um.Start {
		return nil, nil
	}
	m := p.mods[i]
	m.once.Do(func() { p.load(m) })
	return &m.um, nil
}

// load installs a module's unwind tables: from its symbol file (which also
// finds .debug_frame in a separate debug file) or, without symbols, from the
// mapped file itself.
func (p *Process) load(m *module) {
	if p.opts.Objects != nil {
		key := m.path
		if m.data != nil {
			key = "\x00" + m.um.Name
		}
		var src unwind.Sources
		m.bin, src, m.err = p.opts.Objects.get(key).tables(m.um.Name, m.path, m.data, p.opts.NoSymbols, p.opts.Symbols)
		m.um.SetSources(src)
		return
	}
	if !p.opts.NoSymbols {
		if m.data != nil {
			m.bin, m.err = symbols.OpenBytes(m.um.Name, m.data, p.opts.Symbols)
		} else {
			m.bin, m.err = symbols.Open(m.path, p.opts.Symbols)
		}
		if m.bin != nil {
			u, _ := m.bin.UnwindSections()
			m.um.SetSources(unwind.Sources{
				EHFrameHdr: unwind.Section{Data: u.EhFrameHdr.Data, Addr: u.EhFrameHdr.Addr},
				EHFrame:    unwind.Section{Data: u.EhFrame.Data, Addr: u.EhFrame.Addr},
				DebugFrame: unwind.Section{Data: u.DebugFrame.Data, Addr: u.DebugFrame.Addr},
			})
			return
		}
	}
	var f *elf.File
	var err error
	if m.data != nil {
		f, err = elf.NewFile(bytes.NewReader(m.data))
	} else {
		f, err = elf.Open(m.path)
	}
	if err != nil {
		m.err = fmt.Errorf("snapshot: %s: %w", m.um.Name, err)
		return
	}
	defer f.Close()
	src, err := unwind.ReadSources(f)
	if err != nil {
		m.err = err
	}
	m.um.SetSources(src)
}

// SymbolInfo implements unwind.LookupIP from the module's symbol file.
func (p *Process) SymbolInfo(um *unwind.Module, pc uint64) ([]unwind.Symbol, error) {
	if um == nil {
		return nil, nil
	}
	m, _ := um.Client.(*module)
	if m == nil || m.bin == nil {
		return nil, nil
	}
	frames, err := m.bin.Lookup(pc - um.Bias)
	return Symbols(frames, um.Bias), err
}

// Symbols converts a symbols lookup into the engine's symbolic information:
// bias turns link-time function starts into runtime ones.
func Symbols(frames []symbols.Frame, bias uint64) []unwind.Symbol {
	if len(frames) == 0 {
		return nil
	}
	out := make([]unwind.Symbol, len(frames))
	for i, f := range frames {
		out[i] = unwind.Symbol{Function: f.Function, LinkageName: f.LinkageName, File: f.File, Line: f.Line, Column: f.Column, DeclLine: f.DeclLine}
		if f.Start != 0 {
			out[i].FuncStart = f.Start + bias
		}
	}
	return out
}

// ReadMemory reads the process image (outside any thread's stack copy).
func (p *Process) ReadMemory(buf []byte, addr uint64) (int, error) {
	n, err := p.image.ReadFull(buf, p.asid, addr)
	if n > 0 {
		err = nil // a short read is the engine's "rest unreadable"
	}
	return n, err
}

// Thread is one register set and stack copy in the process: an unwind
// client (CopyIn and LookupIP).
//
// A Thread is used by one goroutine at a time; it keeps its Unwinder (and the
// Unwinder's caches) between walks.
type Thread struct {
	*Process
	regs    unwind.Registers
	regions []region // sorted by address, disjoint
	u       *unwind.Unwinder
	// mem reads the image for this thread alone: a memimage.Reader keeps
	// the window its last read came from, so the engine's next word or
	// block from the same code or data costs a copy, not a section lookup
	// and a fault guard.
	mem *memimage.Reader
}

// region is a copy of target memory at addr.
type region struct {
	addr uint64
	data []byte
}

// Thread returns a client for a thread whose registers are regs and whose
// stack bytes from stackAddr on are stack (the slice is used, not copied).
func (p *Process) Thread(regs *unwind.Registers, stack []byte, stackAddr uint64) *Thread {
	t := &Thread{Process: p, regs: *regs, mem: p.image.NewReader(p.asid)}
	t.AddMemory(stack, stackAddr)
	return t
}

// Reset makes t describe another sample of the same process (keeping its
// Unwinder and that Unwinder's caches): a profiler's loop over samples.
func (t *Thread) Reset(regs *unwind.Registers, stack []byte, stackAddr uint64) {
	t.regs = *regs
	t.regions = t.regions[:0]
	t.AddMemory(stack, stackAddr)
}

// AddMemory adds another copy of memory the walk may need, e.g. the thread's
// normal stack when the sample was taken on a signal stack. Bytes already
// covered by an earlier copy keep the earlier copy's contents.
func (t *Thread) AddMemory(data []byte, addr uint64) {
	if len(data) == 0 || addr+uint64(len(data)) < addr {
		return
	}
	i := sort.Search(len(t.regions), func(i int) bool { return t.regions[i].addr >= addr })
	// Trim against the neighbours so regions stay disjoint.
	if i > 0 {
		prev := t.regions[i-1]
		if end := prev.addr + uint64(len(prev.data)); end > addr {
			if end-addr >= uint64(len(data)) {
				return
			}
			data, addr = data[end-addr:], end
		}
	}
	if i < len(t.regions) {
		if next := t.regions[i].addr; addr+uint64(len(data)) > next {
			data = data[:next-addr]
		}
	}
	if len(data) == 0 {
		return
	}
	t.regions = append(t.regions, region{})
	copy(t.regions[i+1:], t.regions[i:])
	t.regions[i] = region{addr, data}
}

// ReadMemory implements unwind.CopyIn: the memory copies first, the image
// for everything else.
func (t *Thread) ReadMemory(buf []byte, addr uint64) (int, error) {
	done := 0
	for done < len(buf) {
		a := addr + uint64(done)
		i := sort.Search(len(t.regions), func(i int) bool { return t.regions[i].addr > a }) - 1
		if i >= 0 {
			r := t.regions[i]
			if off := a - r.addr; off < uint64(len(r.data)) {
				done += copy(buf[done:], r.data[off:])
				continue
			}
		}
		// Up to the next copy (if any) from the image.
		want := buf[done:]
		if i+1 < len(t.regions) {
			if next := t.regions[i+1].addr; next-a < uint64(len(want)) {
				want = want[:next-a]
			}
		}
		n, err := t.mem.ReadFull(want, a)
		done += n
		if n < len(want) {
			if done > 0 {
				err = nil
			}
			return done, err
		}
	}
	return done, nil
}

// ReadRegister implements unwind.CopyIn.
func (t *Thread) ReadRegister(reg int) (uint64, bool) { return t.regs.Get(reg) }

// Backtrace walks the thread's stack from its registers.
func (t *Thread) Backtrace(opts unwind.BacktraceOptions) (unwind.Trace, error) {
	u, err := t.start()
	if err != nil {
		return unwind.Trace{}, err
	}
	return u.Backtrace(opts), nil
}

// Walk returns the thread's physical frames (pcs and CFAs only), appending
// to dst.
func (t *Thread) Walk(dst []unwind.Frame) ([]unwind.Frame, unwind.StopReason, error) {
	u, err := t.start()
	if err != nil {
		return dst, unwind.StopCorrupt, err
	}
	dst, stop := u.Walk(dst)
	return dst, stop, u.Err()
}

// start positions the thread's Unwinder at frame 0.
func (t *Thread) start() (*unwind.Unwinder, error) {
	if t.u == nil {
		t.u = unwind.New(t, t, nil)
	}
	return t.u, t.u.InitRegisters(&t.regs)
}
