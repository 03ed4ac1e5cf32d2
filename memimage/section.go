package memimage

import (
	"errors"
	"fmt"
	"io"
	"runtime"
)

// A Section is a contiguous, read-only run of bytes that an image can place at
// a virtual address: part of a file (NewFileSection, SectionCache.AddFile) or a
// byte slice already in memory (NewMemorySection), such as a core file's
// PT_LOAD segment or a perf sample's stack copy.
//
// A Section is immutable and safe for concurrent use. One Section may be placed
// in many images, in many address spaces and at many addresses; images split
// their view of it without copying.
type Section struct {
	name   string
	offset uint64 // offset of the first byte within the file; 0 for memory sections
	size   uint64
	data   []byte   // memory sections
	file   *fileMap // file sections
}

// NewMemorySection returns a section holding data. The name is what
// Image.RemoveFile matches; it is usually the file the bytes came from (a core
// file, a perf.data file). The section keeps data without copying it, so the
// caller must not change data afterwards. Reads of data are not guarded
// against faults: for bytes that live in a file (a core's PT_LOAD segment),
// prefer NewFileSection on that file, which maps it lazily, notices a changed
// file and survives the file shrinking under it. It returns a *SectionError if
// data is empty.
func NewMemorySection(name string, data []byte) (*Section, error) {
	if len(data) == 0 {
		return nil, &SectionError{Name: name, Err: errors.New("no bytes")}
	}
	return &Section{name: name, size: uint64(len(data)), data: data}, nil
}

// NewFileSection returns a section for size bytes of the file at path,
// starting at offset. Like libipt, it cuts size silently to the end of the file
// and fails if offset lies at or beyond the end. It records the file's size,
// mtime and identity now; the file is opened and mapped only when first read,
// and a file that changed in between makes reads fail with a *StaleFileError.
//
// A section made here stays mapped from its first read until it becomes
// unreachable; use a SectionCache to bound how many bytes stay mapped.
func NewFileSection(path string, offset, size uint64) (*Section, error) {
	return newFileSection(path, offset, size, nil)
}

func newFileSection(path string, offset, size uint64, cache *SectionCache) (*Section, error) {
	if size == 0 {
		return nil, &SectionError{Name: path, Offset: offset, Err: errors.New("empty range")}
	}
	st, err := statFile(path)
	if err != nil {
		return nil, &SectionError{Name: path, Offset: offset, Size: size, Err: err}
	}
	if st.size <= 0 || uint64(st.size) <= offset {
		return nil, &SectionError{Name: path, Offset: offset, Size: size,
			Err: fmt.Errorf("offset lies beyond the end of the %d-byte file", st.size)}
	}
	if avail := uint64(st.size) - offset; size > avail {
		size = avail
	}
	f := &fileMap{path: path, offset: offset, size: size, recorded: st, cache: cache}
	s := &Section{name: path, offset: offset, size: size, file: f}
	// The mapping belongs to the section: release it once nothing can read
	// through the section any more. The cleanup refers to the mapping only, so
	// it does not keep the section alive.
	runtime.AddCleanup(s, (*fileMap).destroy, f)
	return s, nil
}

// Name returns the file name (or, for memory sections, the name given).
func (s *Section) Name() string { return s.name }

// Offset returns the file offset of the section's first byte (0 for memory
// sections).
func (s *Section) Offset() uint64 { return s.offset }

// Size returns the section's size in bytes, after cutting it to the file.
func (s *Section) Size() uint64 { return s.size }

// ReadAt reads from the section at offset off (relative to the section start),
// as io.ReaderAt: it returns io.EOF when the section ends before p is full.
func (s *Section) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("memimage: section %s: negative offset %d", s.name, off)
	}
	if uint64(off) >= s.size {
		return 0, io.EOF
	}
	want := len(p)
	if rest := s.size - uint64(off); uint64(want) > rest {
		want = int(rest)
	}
	n, err := s.read(p[:want], uint64(off))
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

// read copies section bytes starting at off into p; the caller guarantees
// off+len(p) <= s.size.
func (s *Section) read(p []byte, off uint64) (int, error) {
	if s.data != nil {
		return copy(p, s.data[off:]), nil
	}
	return s.file.readAt(p, off)
}
