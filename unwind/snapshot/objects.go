package snapshot

import (
	"bytes"
	"debug/elf"
	"fmt"
	"sync"

	"github.com/sondedbg/sonde/symbols"
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
}

// NewObjects makes an empty cache; Close releases what it opened.
func NewObjects() *Objects { return &Objects{files: map[string]*object{}} }

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
	return nil
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
