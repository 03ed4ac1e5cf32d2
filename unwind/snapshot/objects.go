package snapshot

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/sondedbg/sonde/memimage"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/symbols/debugfile"
	"github.com/sondedbg/sonde/unwind"
)

// Objects shares what Processes learn of a file — its program headers, its
// symbol file and unwind tables — between every Process that maps it. A
// profiler sees many address spaces (processes, and each one again after it
// maps another file) over the same few files; without Objects each would
// open and index them anew. Safe for concurrent use.
type Objects struct {
	mu    sync.Mutex
	files map[string]*object
	// sections and modules are shared by the Processes that map a file at
	// the same place: a profiler's next address space of a process (after
	// one more mmap) or its next process on the same binaries. A module
	// carries the engine's row cache (8 KiB, warm) and a file section its
	// mapping and the chunks copied out of it, which would otherwise be
	// made again, and faulted in again, for every address space.
	sections map[sectionKey]*memimage.Section
	modules  map[moduleKey]*module
}

type sectionKey struct {
	path         string
	offset, size uint64
}

type moduleKey struct {
	path, name       string
	data             *byte // an in-memory image's first byte
	start, end, bias uint64
}

// maxShared bounds the sections and modules an Objects keeps for sharing
// (beyond it they are forgotten, still in use by their Processes): a
// system-wide recording of many short processes meets each file at many
// addresses.
const maxShared = 4096

// NewObjects makes an empty cache; Close releases what it opened.
func NewObjects() *Objects {
	return &Objects{files: map[string]*object{}, sections: map[sectionKey]*memimage.Section{}, modules: map[moduleKey]*module{}}
}

// section returns the file section of path's bytes [offset, offset+size).
func (o *Objects) section(path string, offset, size uint64) (*memimage.Section, error) {
	k := sectionKey{path, offset, size}
	o.mu.Lock()
	sec := o.sections[k]
	o.mu.Unlock()
	if sec != nil {
		return sec, nil
	}
	sec, err := memimage.NewFileSection(path, offset, size)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.sections) >= maxShared {
		clear(o.sections)
	}
	o.sections[k] = sec
	return sec, nil
}

// module returns the module spec describes, shared with the Processes
// that made it before.
func (o *Objects) module(spec moduleSpec) *module {
	k := moduleKey{path: spec.path, name: spec.name, start: spec.start, end: spec.end, bias: spec.bias}
	if len(spec.data) > 0 {
		k.data = &spec.data[0]
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if m := o.modules[k]; m != nil {
		return m
	}
	if len(o.modules) >= maxShared {
		clear(o.modules)
	}
	m := spec.newModule()
	o.modules[k] = m
	return m
}

// object is one file as every Process sees it.
type object struct {
	headers sync.Once
	progs   []elf.ProgHeader
	elfErr  error

	load sync.Once
	bin  *symbols.Binary
	src  unwind.Sources
	err  error
}

func (o *Objects) get(path string) *object {
	o.mu.Lock()
	defer o.mu.Unlock()
	obj := o.files[path]
	if obj == nil {
		obj = &object{}
		o.files[path] = obj
	}
	return obj
}

// programs returns the file's program headers, read once.
func (obj *object) programs(path string, data []byte) ([]elf.ProgHeader, error) {
	obj.headers.Do(func() {
		// The program headers alone (debugfile.Progs: three small reads,
		// where debug/elf reads every section header too); debug/elf
		// says what is wrong with a file they cannot be read from.
		if progs, ok := readProgs(path, data); ok {
			obj.progs = progs
			return
		}
		f, err := openELF(path, data)
		if err != nil {
			obj.elfErr = err
			return
		}
		defer f.Close()
		for _, p := range f.Progs {
			obj.progs = append(obj.progs, p.ProgHeader)
		}
	})
	return obj.progs, obj.elfErr
}

// tables opens the file's symbols (unless noSymbols) and unwind tables once.
func (obj *object) tables(name, path string, data []byte, noSymbols bool, opts *symbols.Options) (*symbols.Binary, unwind.Sources, error) {
	obj.load.Do(func() {
		if !noSymbols {
			if data != nil {
				obj.bin, obj.err = symbols.OpenBytes(name, data, opts)
			} else {
				obj.bin, obj.err = symbols.Open(path, opts)
			}
			if obj.bin != nil {
				u, _ := obj.bin.UnwindSections()
				obj.src = unwind.Sources{
					EHFrameHdr: unwind.Section{Data: u.EhFrameHdr.Data, Addr: u.EhFrameHdr.Addr},
					EHFrame:    unwind.Section{Data: u.EhFrame.Data, Addr: u.EhFrame.Addr},
					DebugFrame: unwind.Section{Data: u.DebugFrame.Data, Addr: u.DebugFrame.Addr},
				}
				return
			}
		}
		f, err := openELF(path, data)
		if err != nil {
			obj.err = fmt.Errorf("snapshot: %s: %w", name, err)
			return
		}
		defer f.Close()
		obj.src, obj.err = unwind.ReadSources(f)
	})
	return obj.bin, obj.src, obj.err
}

// Close releases every symbol file the cache opened. Processes that used it
// must not be used afterwards.
func (o *Objects) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, obj := range o.files {
		if obj.bin != nil {
			obj.bin.Close()
		}
	}
	o.files = map[string]*object{}
	clear(o.sections)
	clear(o.modules)
	return nil
}

// readProgs reads the program headers of the file at path (or in data) by
// themselves; ok is false when they cannot be read that way.
func readProgs(path string, data []byte) (progs []elf.ProgHeader, ok bool) {
	var r io.ReaderAt
	if data != nil {
		r = bytes.NewReader(data)
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, false
		}
		defer f.Close()
		r = f
	}
	progs, _, err := debugfile.Progs(r)
	return progs, err == nil && len(progs) > 0
}

func openELF(path string, data []byte) (*elf.File, error) {
	if data != nil {
		return elf.NewFile(bytes.NewReader(data))
	}
	return elf.Open(path)
}

// Binary returns the symbol file of one of the process's modules (nil when
// it has none or the module is not the process's).
func (p *Process) Binary(um *unwind.Module) *symbols.Binary {
	if um == nil {
		return nil
	}
	m, _ := um.Client.(*module)
	if m == nil {
		return nil
	}
	m.once.Do(func() { p.load(m) })
	return m.bin
}
