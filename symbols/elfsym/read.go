package elfsym

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"slices"
)

// Error reports a symbol table that could not be read: which file, which
// section, why.
type Error struct {
	File    string // the name given to New / the path given to Open
	Section string // ".symtab", ".dynsym", "PLT", or "" for the whole file
	Err     error
}

func (e *Error) Error() string {
	if e.Section == "" {
		return fmt.Sprintf("elfsym: %s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("elfsym: %s: %s: %v", e.File, e.Section, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// New builds a table from the symbol tables of files that describe one
// module (the binary, its separate debug file, its MiniDebugInfo ELF), plus
// PLT stub names from those files whose PLT sections have contents. nil
// files and repeats of a file are skipped. name
// identifies the module in errors. When some table is corrupt, New returns
// the symbols it could read together with an error; a nil Table comes only
// with a nil file list.
func New(name string, files ...*elf.File) (*Table, error) {
	var all []Symbol
	var errs []error
	for i, f := range files {
		// The same *elf.File twice (a binary that is its own debug file)
		// would only be read twice.
		if f == nil || slices.Contains(files[:i], f) {
			continue
		}
		syms, err := readFile(f)
		all = append(all, syms...)
		for _, e := range err {
			e.File = name
			errs = append(errs, e)
		}
	}
	t := build(name, all)
	t.sections = sectionRanges(files)
	return t, errors.Join(errs...)
}

// Open reads the symbol tables of the ELF file at path.
func Open(path string) (*Table, error) {
	osf, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	defer osf.Close()
	f, err := parseELF(func() (*elf.File, error) { return elf.NewFile(osf) })
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	return New(path, f)
}

// FromImage reads the symbols of an ELF image held in memory, such as the
// vDSO copied out of a target process.
func FromImage(name string, image []byte) (*Table, error) {
	f, err := parseELF(func() (*elf.File, error) { return elf.NewFile(bytes.NewReader(image)) })
	if err != nil {
		return nil, &Error{File: name, Err: err}
	}
	return New(name, f)
}

// parseELF runs a debug/elf call, turning a panic on hostile bytes into an
// error so one bad module cannot take the process down.
func parseELF(fn func() (*elf.File, error)) (f *elf.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("malformed ELF (parser panic: %v)", r)
		}
	}()
	return fn()
}

func isNoSymbols(err error) bool { return errors.Is(err, elf.ErrNoSymbols) }

// readFile collects the usable symbols of one file; errors name the section.
func readFile(f *elf.File) (out []Symbol, errs []*Error) {
	add := func(list []elf.Symbol, origin Origin) {
		out = slices.Grow(out, len(list))
		for i := range list {
			if !inAllocSection(f, list[i].Section) {
				continue
			}
			if s, ok := convert(&list[i], origin); ok {
				s.Index = uint32(i + 1) // debug/elf leaves out entry 0
				out = append(out, s)
			}
		}
	}
	done, err := safeRead(func() (bool, error) {
		return readSymtab64(f, func(n int) { out = slices.Grow(out, n+dynsymRoom(f, n)) }, func(es *elf.Symbol, i int) {
			if !inAllocSection(f, es.Section) {
				return
			}
			if s, ok := convert(es, OriginSymtab); ok {
				s.Index = uint32(i)
				out = append(out, s)
			}
		})
	})
	if done {
		if err != nil && !isNoSymbols(err) {
			errs = append(errs, &Error{Section: ".symtab", Err: err})
		}
	} else if syms, err := safeSymbols(f.Symbols); err != nil && !isNoSymbols(err) {
		errs = append(errs, &Error{Section: ".symtab", Err: err})
	} else {
		add(syms, OriginSymtab)
	}
	dyn, err := safeSymbols(f.DynamicSymbols)
	if err != nil && !isNoSymbols(err) {
		errs = append(errs, &Error{Section: ".dynsym", Err: err})
		return out, errs // PLT stubs are named through .dynsym
	}
	add(dyn, OriginDynsym)
	plt, err := safeSymbols2(func() ([]Symbol, error) { return pltSymbols(f, dyn) })
	if err != nil {
		errs = append(errs, &Error{Section: "PLT", Err: err})
	}
	out = append(out, plt...)
	return out, errs
}

func safeSymbols(fn func() ([]elf.Symbol, error)) (s []elf.Symbol, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("malformed symbol table (parser panic: %v)", r)
		}
	}()
	return fn()
}

// dynsymRoom is the .dynsym entries to make room for beside a .symtab of n
// entries (read after it; growing the list then would copy it whole), at
// most n: the header's size is not trusted beyond what .symtab proved.
func dynsymRoom(f *elf.File, n int) int {
	ds := f.SectionByType(elf.SHT_DYNSYM)
	if ds == nil || ds.Size/24 > uint64(n) {
		return 0
	}
	return int(ds.Size / 24)
}

func safeRead(fn func() (bool, error)) (done bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			done, err = true, fmt.Errorf("malformed symbol table (parser panic: %v)", r)
		}
	}()
	return fn()
}

func safeSymbols2(fn func() ([]Symbol, error)) (s []Symbol, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("malformed PLT (parser panic: %v)", r)
		}
	}()
	return fn()
}

// inAllocSection keeps symbols defined in a section that is loaded into
// memory. It drops undefined ones, the reserved indices (SHN_ABS values are
// not addresses, SHN_COMMON only occurs in object files, SHN_XINDEX needs a
// table executables do not have), and symbols of non-allocated sections
// (.gnu.warning.*, .comment, debug sections), whose "addresses" are offsets
// that would collide with real code addresses near 0. A section of a
// separate debug file that is NOBITS keeps its SHF_ALLOC flag, so debug-file
// symbols survive.
func inAllocSection(f *elf.File, idx elf.SectionIndex) bool {
	if idx == elf.SHN_UNDEF || idx >= elf.SHN_LORESERVE {
		return false
	}
	if int(idx) >= len(f.Sections) {
		return false // corrupt index: no section to place the symbol in
	}
	return f.Sections[idx].Flags&elf.SHF_ALLOC != 0
}

// convert keeps defined symbols that name code or data addresses.
func convert(es *elf.Symbol, origin Origin) (Symbol, bool) {
	if es.Name == "" {
		return Symbol{}, false
	}
	kind, ok := kindOf(elf.ST_TYPE(es.Info))
	if !ok {
		return Symbol{}, false
	}
	name, version := StripVersion(es.Name)
	sep := uint8(0)
	if version != "" {
		sep = uint8(len(es.Name) - len(name) - len(version))
	} else {
		version = es.Version // .dynsym versions come from .gnu.version
	}
	return Symbol{Name: name, Version: version, Addr: es.Value, Size: es.Size,
		Kind: kind, Bind: elf.ST_BIND(es.Info), Origin: origin, VersionSep: sep}, true
}
