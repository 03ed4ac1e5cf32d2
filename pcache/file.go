package pcache

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// File is a validated cache file. Its sections' bytes are memory-mapped
// read-only and stay valid until Close.
type File struct {
	Path     string
	Identity Identity // of the source file the data was derived from

	sections []Section
	data     []byte
	mapped   bool
}

// Sections returns every section of the file, in file order.
func (f *File) Sections() []Section { return f.sections }

// Section returns the data of one client's named section.
func (f *File) Section(client, name string) ([]byte, bool) {
	for i := range f.sections {
		if s := &f.sections[i]; s.Client == client && s.Name == name {
			return s.Data, true
		}
	}
	return nil, false
}

// clientSections returns the sections written by client.
func (f *File) clientSections(client string) []Section {
	var out []Section
	for _, s := range f.sections {
		if s.Client == client {
			out = append(out, s)
		}
	}
	return out
}

// Size is the size of the file in bytes.
func (f *File) Size() int64 { return int64(len(f.data)) }

// Close unmaps the file; its sections' Data must no longer be used.
func (f *File) Close() error {
	if f == nil || !f.mapped || f.data == nil {
		return nil
	}
	d := f.data
	f.data, f.sections = nil, nil
	return unix.Munmap(d)
}

// checkOwner rejects a file or directory that does not belong to the
// effective user or that others may write: its contents would be trusted.
func checkOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fail(path, ReasonOwner, "no owner information")
	}
	if int(st.Uid) != os.Geteuid() {
		return fail(path, ReasonOwner, "owned by uid %d, not %d", st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fail(path, ReasonOwner, "mode %v lets others write", fi.Mode().Perm())
	}
	return nil
}

// OpenFile maps and validates the cache file at path: ownership, then every
// check of Decode. want, when not nil, is the identity the file must match.
func OpenFile(path string, want *Identity) (*File, error) { return openFile(path, want, false) }

// openFile is OpenFile; serial checks the sections on the calling goroutine
// alone (Cache.Background).
func openFile(path string, want *Identity, serial bool) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{Path: path, Reason: ReasonMissing, Err: err}
		}
		return nil, &Error{Path: path, Reason: ReasonIO, Err: err}
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return nil, &Error{Path: path, Reason: ReasonIO, Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, fail(path, ReasonNotCache, "not a regular file")
	}
	if err := checkOwner(path, fi); err != nil {
		return nil, err
	}
	size := fi.Size()
	if size < dataOffset+footerSize {
		// Too short to map usefully; Decode names the problem.
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, &Error{Path: path, Reason: ReasonIO, Err: err}
		}
		return decode(b, path, want, serial)
	}
	if size > 1<<40 {
		return nil, fail(path, ReasonCorrupt, "%d bytes", size)
	}
	// MAP_POPULATE: one system call maps every page instead of a fault per
	// 64 KiB; the checksums read all of it anyway.
	data, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_POPULATE)
	if err != nil {
		return nil, &Error{Path: path, Reason: ReasonIO, Err: err}
	}
	f, err := decode(data, path, want, serial)
	if err != nil {
		unix.Munmap(data)
		return nil, err
	}
	f.mapped = true
	return f, nil
}
