package symbols

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// maxSectionSize bounds what a compressed section may claim to expand to, so a
// corrupt header cannot make us allocate without bound.
const maxSectionSize = 4 << 30

// elfFile is an opened ELF file: parsed headers plus its bytes, memory-mapped
// read-only when it came from a path (so untouched sections cost no memory).
type elfFile struct {
	name string
	f    *elf.File
	data []byte // the whole file
	mmap bool
	st   os.FileInfo // of the opened file (nil for images in memory)

	// slots memoize section contents by ELF section index: a compressed
	// section is inflated (or taken from the persisted cache) once, on first
	// use, and never at open.
	slots []sectionSlot
	// persist holds the persisted copies of the inflated sections, when the
	// cache is enabled for this file (see persist.go).
	persist *persistState
	// anon are the mappings large inflated sections live in (inflate.go),
	// unmapped at close.
	anonMu sync.Mutex
	anon   [][]byte
}

type sectionSlot struct {
	once sync.Once
	data []byte
	err  error
}

func openELFFile(path string) (*elfFile, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Op: "open", Err: err}
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, &Error{File: path, Op: "stat", Err: err}
	}
	if !st.Mode().IsRegular() {
		return nil, &Error{File: path, Op: "open", Err: errors.New("not a regular file")}
	}
	size := st.Size()
	if size == 0 {
		return nil, &Error{File: path, Op: "open", Err: errors.New("empty file")}
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		// Some file systems cannot map: read the file instead.
		data, err = os.ReadFile(path)
		if err != nil {
			return nil, &Error{File: path, Op: "read", Err: err}
		}
		ef, err := newELFFile(path, data, false)
		if ef != nil {
			ef.st = st
		}
		return ef, err
	}
	ef, err := newELFFile(path, data, true)
	if err != nil {
		unix.Munmap(data)
		return nil, err
	}
	ef.st = st
	return ef, nil
}

func newELFFile(name string, data []byte, mapped bool) (*elfFile, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, &Error{File: name, Op: "parse ELF", Err: err}
	}
	if f.ByteOrder != binary.LittleEndian {
		return nil, &Error{File: name, Op: "parse ELF", Err: errors.New("big-endian ELF is not supported")}
	}
	return &elfFile{name: name, f: f, data: data, mmap: mapped, slots: make([]sectionSlot, len(f.Sections))}, nil
}

func (e *elfFile) close() error {
	if e.persist != nil {
		e.persist.close(e)
	}
	e.unmapBuffers()
	if e.mmap && e.data != nil {
		d := e.data
		e.data = nil
		return unix.Munmap(d)
	}
	return nil
}

// sectionIndex returns the index of the named section, or -1. A legacy
// .zdebug_* section is found under its .debug_* name.
func (e *elfFile) sectionIndex(name string) int {
	for i, s := range e.f.Sections {
		if s.Name == name {
			return i
		}
	}
	if strings.HasPrefix(name, ".debug_") {
		z := ".zdebug_" + name[len(".debug_"):]
		for i, s := range e.f.Sections {
			if s.Name == z {
				return i
			}
		}
	}
	return -1
}

// section returns the contents of the named section, decompressed; nil when
// the file has no such section (or it has no bytes, SHT_NOBITS). Legacy
// .zdebug_* sections are found under their .debug_* name.
func (e *elfFile) section(name string) ([]byte, error) {
	return e.sectionAt(e.sectionIndex(name))
}

// sectionAt returns the contents of section i (nil for i < 0), reading it
// on first use only.
func (e *elfFile) sectionAt(i int) ([]byte, error) {
	if i < 0 || i >= len(e.slots) {
		return nil, nil
	}
	sl := &e.slots[i]
	sl.once.Do(func() { sl.data, sl.err = e.readSection(e.f.Sections[i]) })
	return sl.data, sl.err
}

// declaredSize is what section s holds once decompressed, from its headers
// alone (without inflating anything).
func (e *elfFile) declaredSize(s *elf.Section) uint64 {
	if s.Type == elf.SHT_NOBITS {
		return 0
	}
	if strings.HasPrefix(s.Name, ".zdebug_") {
		if s.Offset > uint64(len(e.data)) || s.Size > uint64(len(e.data))-s.Offset || s.Size < 12 {
			return 0
		}
		return binary.BigEndian.Uint64(e.data[s.Offset+4:])
	}
	return s.Size // debug/elf reports the uncompressed size of SHF_COMPRESSED sections
}

// isCompressed reports whether reading s means inflating it.
func isCompressed(s *elf.Section) bool {
	return s.Type != elf.SHT_NOBITS && (s.Flags&elf.SHF_COMPRESSED != 0 || strings.HasPrefix(s.Name, ".zdebug_"))
}

// readSection reads section s: a slice of the mapped file, or, for a
// compressed section, its persisted inflated copy or a fresh inflation.
func (e *elfFile) readSection(s *elf.Section) ([]byte, error) {
	if isCompressed(s) && e.persist != nil {
		if b, ok := e.persist.lookup(e, s); ok {
			return b, nil
		}
		b, err := e.inflate(s)
		if err == nil && persistable(s) {
			e.persist.added(s, b)
		}
		return b, err
	}
	return e.inflate(s)
}

// inflate reads section s from the file, decompressing it if needed.
func (e *elfFile) inflate(s *elf.Section) ([]byte, error) {
	name := s.Name
	if strings.HasPrefix(name, ".zdebug_") {
		return e.zdebug(s)
	}
	if s.Type == elf.SHT_NOBITS || s.Size == 0 {
		return nil, nil
	}
	if s.Flags&elf.SHF_COMPRESSED != 0 {
		if s.Offset > uint64(len(e.data)) || s.FileSize > uint64(len(e.data))-s.Offset {
			return nil, &Error{File: e.name, Op: "read section " + name, Err: errors.New("section extends past the end of the file")}
		}
		out, err := decompressSHF(e.data[s.Offset:s.Offset+s.FileSize], maxSectionSize, e.sectionBuffer)
		if err != nil {
			return nil, &Error{File: e.name, Op: "decompress section " + name, Err: err}
		}
		return out, nil
	}
	if s.Offset > uint64(len(e.data)) || s.Size > uint64(len(e.data))-s.Offset {
		return nil, &Error{File: e.name, Op: "read section " + name, Err: errors.New("section extends past the end of the file")}
	}
	return e.data[s.Offset : s.Offset+s.Size : s.Offset+s.Size], nil
}

// zdebug decompresses a GNU .zdebug_* section: "ZLIB", a big-endian 64-bit
// size, then a zlib stream.
func (e *elfFile) zdebug(s *elf.Section) ([]byte, error) {
	fail := func(err error) ([]byte, error) {
		return nil, &Error{File: e.name, Op: "decompress section " + s.Name, Err: err}
	}
	if s.Offset > uint64(len(e.data)) || s.Size > uint64(len(e.data))-s.Offset {
		return fail(errors.New("section extends past the end of the file"))
	}
	raw := e.data[s.Offset : s.Offset+s.Size]
	if len(raw) < 12 || string(raw[:4]) != "ZLIB" {
		return fail(errors.New("missing ZLIB header"))
	}
	size := binary.BigEndian.Uint64(raw[4:12])
	if size > maxSectionSize {
		return fail(fmt.Errorf("claimed size %d is too large", size))
	}
	out, err := inflateZlib(raw[12:], size, e.sectionBuffer)
	if err != nil {
		return fail(err)
	}
	return out, nil
}
