package symbols

import (
	"bytes"
	"compress/zlib"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

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
		return newELFFile(path, data, false)
	}
	ef, err := newELFFile(path, data, true)
	if err != nil {
		unix.Munmap(data)
	}
	return ef, err
}

func newELFFile(name string, data []byte, mapped bool) (*elfFile, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, &Error{File: name, Op: "parse ELF", Err: err}
	}
	if f.ByteOrder != binary.LittleEndian {
		return nil, &Error{File: name, Op: "parse ELF", Err: errors.New("big-endian ELF is not supported")}
	}
	return &elfFile{name: name, f: f, data: data, mmap: mapped}, nil
}

func (e *elfFile) close() error {
	if e.mmap && e.data != nil {
		d := e.data
		e.data = nil
		return unix.Munmap(d)
	}
	return nil
}

// section returns the contents of the named section, decompressed; nil when
// the file has no such section (or it has no bytes, SHT_NOBITS). Legacy
// .zdebug_* sections are found under their .debug_* name.
func (e *elfFile) section(name string) ([]byte, error) {
	s := e.f.Section(name)
	if s == nil && strings.HasPrefix(name, ".debug_") {
		if z := e.f.Section(".zdebug_" + name[len(".debug_"):]); z != nil {
			return e.zdebug(z)
		}
	}
	if s == nil || s.Type == elf.SHT_NOBITS || s.Size == 0 {
		return nil, nil
	}
	if s.Flags&elf.SHF_COMPRESSED != 0 {
		if s.FileSize > uint64(len(e.data)) {
			return nil, &Error{File: e.name, Op: "read section " + name, Err: errors.New("section extends past the end of the file")}
		}
		r := io.LimitReader(s.Open(), maxSectionSize)
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, &Error{File: e.name, Op: "decompress section " + name, Err: err}
		}
		return b, nil
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
	zr, err := zlib.NewReader(bytes.NewReader(raw[12:]))
	if err != nil {
		return fail(err)
	}
	out := make([]byte, 0, min(size, uint64(len(raw))*16))
	buf := bytes.NewBuffer(out)
	if _, err := io.Copy(buf, io.LimitReader(zr, int64(size))); err != nil {
		return fail(err)
	}
	return buf.Bytes(), nil
}
