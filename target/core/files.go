package core

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// MappedFile is one file the process had mapped (a path of the NT_FILE note)
// and what sonde found to stand in for it.
type MappedFile struct {
	// Path is the path the core records, without the kernel's " (deleted)".
	Path string
	// Deleted: the file had been unlinked while mapped.
	Deleted bool
	// BuildID is the GNU build-id read from the core's copy of the file's ELF
	// header page, nil when the core does not hold it (or the file is not ELF).
	BuildID []byte
	// Found is the file used for the bytes the core left out; "" if none.
	Found string
	// How says how Found was found: "executable option", "path", "sysroot",
	// "search path" or "build-id".
	How string
	// Rejected lists candidates that exist but are not the mapped file.
	Rejected []error
	// Err says why no file was found (Found == "").
	Err error
	// Needed: some of its mapped bytes are not in the core, so they can only
	// come from the file. Problems reports only needed files.
	Needed bool

	extent uint64 // the file must reach this offset: the furthest mapped byte
	head   []byte // the core's copy of the file's first bytes, if it holds them
	// foundSize is Found's size when it was checked.
	foundSize uint64
	// relro holds the link-time address ranges of Found's PT_GNU_RELRO
	// segments: bytes the dynamic loader relocated and then made read-only,
	// so a read-only mapping of them differs from the file. base is the
	// link-time address of file offset 0 (the first PT_LOAD's page).
	relro      [][2]uint64
	loads      []Segment // Found's PT_LOAD segments, nil if it is not ELF
	base       uint64
	bias       uint64 // load bias: mapped address minus link-time address
	biasKnown  bool
	first      uint64 // where file offset 0 is mapped, if firstKnown
	firstKnown bool
	resolved   bool // resolve ran
	reported   bool // LocateFile put its error in Problems
}

// FileChangedError says a candidate file is not the file the process mapped.
type FileChangedError struct {
	Path   string // the candidate
	Mapped string // the path recorded in the core
	Reason string
}

func (e *FileChangedError) Error() string {
	if e.Path == e.Mapped {
		return fmt.Sprintf("core: %s is not the file the process mapped at that path (rebuilt or replaced since?): %s; not using it", e.Path, e.Reason)
	}
	return fmt.Sprintf("core: %s is not the %s the process mapped: %s; not using it", e.Path, e.Mapped, e.Reason)
}

// FileMissingError says no candidate for a mapped file exists.
type FileMissingError struct {
	Path  string
	Tried []string
}

func (e *FileMissingError) Error() string {
	return fmt.Sprintf("core: mapped file %s not found (tried %q)", e.Path, e.Tried)
}

// candidate is one place a mapped file might be.
type candidate struct {
	path, how string
}

// candidates lists where to look for mf, in order of preference.
func (o *Options) candidates(mf *MappedFile, isExecutable bool) []candidate {
	var out []candidate
	if isExecutable && o.Executable != "" {
		out = append(out, candidate{o.Executable, "executable option"})
	}
	if o.Sysroot != "" {
		out = append(out, candidate{filepath.Join(o.Sysroot, mf.Path), "sysroot"})
	} else {
		out = append(out, candidate{mf.Path, "path"})
	}
	for _, dir := range o.SearchPath {
		out = append(out, candidate{filepath.Join(dir, filepath.Base(mf.Path)), "search path"})
	}
	return out
}

// resolve finds the file that stands in for mf. coreTime is the core file's
// mtime: without a build-id to compare, a file modified after the core was
// written cannot be trusted.
func (o *Options) resolve(mf *MappedFile, isExecutable bool, coreTime int64) {
	var tried []string
	try := func(c candidate) bool {
		tried = append(tried, c.path)
		st, err := os.Stat(c.path)
		if err != nil || !st.Mode().IsRegular() {
			return false
		}
		if err := mf.verify(c.path, st, coreTime); err != nil {
			mf.Rejected = append(mf.Rejected, err)
			return false
		}
		mf.Found, mf.How, mf.foundSize = c.path, c.how, uint64(st.Size())
		mf.relro, mf.loads, mf.base = elfLayout(c.path)
		return true
	}
	for _, c := range o.candidates(mf, isExecutable) {
		if try(c) {
			return
		}
	}
	if o.FindByBuildID != nil && len(mf.BuildID) > 0 {
		if p := o.FindByBuildID(append([]byte(nil), mf.BuildID...)); p != "" && try(candidate{p, "build-id"}) {
			return
		}
	}
	if len(mf.Rejected) == 1 {
		mf.Err = mf.Rejected[0]
	} else if len(mf.Rejected) > 1 {
		// Say why each candidate was refused: a wrong --exe and a rebuilt
		// file at the recorded path are two different mistakes.
		mf.Err = errors.Join(mf.Rejected...)
	} else {
		mf.Err = &FileMissingError{Path: mf.Path, Tried: tried}
	}
}

// verify checks that the file at path can be the one the process mapped: the
// same build-id when the core holds one; else the same first bytes when the
// core holds those; else not modified after the core was written.
func (mf *MappedFile) verify(path string, st os.FileInfo, coreTime int64) error {
	changed := func(format string, args ...any) error {
		return &FileChangedError{Path: path, Mapped: mf.Path, Reason: fmt.Sprintf(format, args...)}
	}
	if size := uint64(st.Size()); alignUp(size, pageSize) < mf.extent {
		return changed("it has %d bytes but the process mapped it up to offset %d", size, mf.extent)
	}
	if mf.BuildID != nil {
		f, err := os.Open(path)
		if err != nil {
			return changed("cannot read its build-id: %v", err)
		}
		defer f.Close()
		id, err := readBuildID(f, uint64(st.Size()))
		if err != nil {
			return changed("the core says build-id %s, the file has none (%v)", hex.EncodeToString(mf.BuildID), err)
		}
		if !bytes.Equal(id, mf.BuildID) {
			return changed("build-id %s, the core says %s", hex.EncodeToString(id), hex.EncodeToString(mf.BuildID))
		}
		return nil
	}
	if len(mf.head) > 0 {
		f, err := os.Open(path)
		if err != nil {
			return changed("cannot read it: %v", err)
		}
		defer f.Close()
		b := make([]byte, len(mf.head))
		if n, _ := f.ReadAt(b, 0); n < len(b) || !bytes.Equal(b, mf.head) {
			return changed("its first %d bytes differ from the core's copy of them", len(mf.head))
		}
		return nil
	}
	if st.ModTime().UnixNano() > coreTime {
		return changed("modified at %s, after the core was written, and the core holds no build-id to prove it unchanged", st.ModTime().Format("2006-01-02 15:04:05.000000000"))
	}
	return nil
}

// pageSize is the x86-64 Linux page size; mappings and core segments are
// multiples of it.
const pageSize = 4096

// offsetReader reads an io.ReaderAt from base on: an ELF image mapped at base.
type offsetReader struct {
	r    io.ReaderAt
	base uint64
}

func (o offsetReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || o.base+uint64(off) < o.base {
		return 0, io.EOF
	}
	return o.r.ReadAt(p, int64(o.base+uint64(off)))
}

// ptGNURelro marks the part of a writable segment that the dynamic loader
// makes read-only after relocating it.
const ptGNURelro = 0x6474e552

// elfLayout returns an ELF file's PT_LOAD segments, the link-time address
// ranges of its PT_GNU_RELRO segments, and the link-time address of its first
// PT_LOAD's page, which the mapping of file offset 0 lands on. A file that is
// not ELF has none of them.
func elfLayout(path string) (relro [][2]uint64, loads []Segment, base uint64) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, 0
	}
	h, err := readELFHeader(f)
	if err != nil {
		return nil, nil, 0
	}
	segs, err := readProgramHeaders(f, h, uint64(st.Size()))
	if err != nil {
		return nil, nil, 0
	}
	for _, r := range segs {
		switch {
		case r.Type == ptLoad:
			if len(loads) == 0 {
				base = r.Vaddr &^ (pageSize - 1)
			}
			loads = append(loads, r)
		case r.Type == ptGNURelro && r.MemSize > 0 && r.Vaddr+r.MemSize > r.Vaddr:
			relro = append(relro, [2]uint64{r.Vaddr, r.Vaddr + r.MemSize})
		}
	}
	sort.Slice(relro, func(i, j int) bool { return relro[i][0] < relro[j][0] })
	return relro, loads, base
}

// flagsAt returns the PF_* flags of the file's PT_LOAD that covers the
// mapped address addr, using the load bias; ok is false when that cannot be
// told (not ELF, bias unknown, no segment there).
func (mf *MappedFile) flagsAt(addr uint64) (flags uint32, ok bool) {
	if !mf.biasKnown || addr < mf.bias {
		return 0, false
	}
	v := addr - mf.bias
	for _, s := range mf.loads {
		lo := s.Vaddr &^ (pageSize - 1)
		if v >= lo && v < alignUp(s.Vaddr+s.MemSize, pageSize) {
			return s.Flags, true
		}
	}
	return 0, false
}
