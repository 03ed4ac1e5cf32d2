package pcache

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// crcWriter counts and checksums what a client persists.
type crcWriter struct {
	w   io.Writer
	n   int64
	crc uint32
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.crc = crc32.Update(c.crc, castagnoli(), p[:n])
	return n, err
}

// fileWriter lays out one new cache file.
type fileWriter struct {
	path    string
	bw      *bufio.Writer
	pos     int64
	entries []tableEntry
	seen    map[[2]string]bool
}

var zeros [maxAlign]byte

func (w *fileWriter) pad(align int) error {
	n := (int64(align) - w.pos%int64(align)) % int64(align)
	_, err := w.bw.Write(zeros[:n])
	w.pos += n
	return err
}

// add records a section whose bytes were written at off.
func (w *fileWriter) add(s Section, off, size int64, crc uint32) error {
	k := [2]string{s.Client, s.Name}
	if w.seen[k] {
		return fail(w.path, ReasonClient, "section %s/%s written twice", s.Client, s.Name)
	}
	w.seen[k] = true
	s.Data = nil
	w.entries = append(w.entries, tableEntry{Section: s, off: uint64(off), size: uint64(size), crc: crc})
	return nil
}

// copySection writes a section kept from the old file.
func (w *fileWriter) copySection(s Section) error {
	if err := w.pad(s.Align); err != nil {
		return err
	}
	off := w.pos
	if _, err := w.bw.Write(s.Data); err != nil {
		return err
	}
	w.pos += int64(len(s.Data))
	return w.add(s, off, int64(len(s.Data)), checksum(s.Data))
}

// persistClient runs a client's size and persist callbacks.
func (w *fileWriter) persistClient(c Client, ctx *PersistContext) error {
	id := c.ID()
	if id.Name == "" || len(id.Name) > maxName {
		return fail(w.path, ReasonClient, "client name %q", id.Name)
	}
	ctx.Offset = w.pos
	specs, user, err := c.Size(ctx)
	if err != nil {
		return &Error{Path: w.path, Reason: ReasonClient, Err: fmt.Errorf("client %s: size: %w", id.Name, err)}
	}
	for i, sp := range specs {
		if sp.Align == 0 {
			sp.Align = 1
		}
		if sp.Name == "" || len(sp.Name) > maxName || sp.Size < 0 || sp.Align < 0 || sp.Align > maxAlign || sp.Align&(sp.Align-1) != 0 {
			return fail(w.path, ReasonClient, "client %s: bad section %q (size %d, align %d)", id.Name, sp.Name, sp.Size, sp.Align)
		}
		if err := w.pad(sp.Align); err != nil {
			return err
		}
		ctx.Offset = w.pos
		cw := &crcWriter{w: w.bw}
		if err := c.Persist(ctx, i, cw, user); err != nil {
			return &Error{Path: w.path, Reason: ReasonClient, Err: fmt.Errorf("client %s: persist %s: %w", id.Name, sp.Name, err)}
		}
		if cw.n != sp.Size {
			return fail(w.path, ReasonClient, "client %s: section %s: wrote %d bytes, announced %d", id.Name, sp.Name, cw.n, sp.Size)
		}
		if err := w.add(Section{Client: id.Name, ClientVersion: id.Version, Name: sp.Name, Align: sp.Align}, ctx.Offset, sp.Size, cw.crc); err != nil {
			return err
		}
		w.pos += sp.Size
	}
	return nil
}

// writeFile writes a complete cache file to tmp (an open, empty file): the
// sections kept from old (those of clients not in clients), then each
// client's. It neither fsyncs nor renames: a file torn by a crash fails
// validation (size, footer, checksums) and is rebuilt, so durability is not
// worth the tens of milliseconds an fsync of 10 MB costs a first run.
func writeFile(tmp *os.File, path, key string, id Identity, old *File, clients []Client) error {
	if len(id.BuildID) > maxBuildID {
		return fail(path, ReasonClient, "build-id of %d bytes", len(id.BuildID))
	}
	w := &fileWriter{path: path, bw: bufio.NewWriterSize(tmp, 1<<20), seen: map[[2]string]bool{}}
	if _, err := w.bw.Write(zeros[:dataOffset]); err != nil { // the header goes here last
		return err
	}
	w.pos = dataOffset
	replaced := map[string]bool{}
	for _, c := range clients {
		replaced[c.ID().Name] = true
	}
	if old != nil {
		for _, s := range old.sections {
			if !replaced[s.Client] {
				if err := w.copySection(s); err != nil {
					return err
				}
			}
		}
	}
	for _, c := range clients {
		ctx := &PersistContext{Key: key, Identity: id}
		if old != nil {
			if ex := old.clientSections(c.ID().Name); len(ex) > 0 && ex[0].ClientVersion == c.ID().Version {
				ctx.Existing = ex
			}
		}
		if err := w.persistClient(c, ctx); err != nil {
			return err
		}
	}
	if len(w.entries) > maxEntries {
		return fail(path, ReasonClient, "%d sections", len(w.entries))
	}
	var table []byte
	for i := range w.entries {
		table = appendEntry(table, &w.entries[i])
	}
	tableOff := w.pos
	if _, err := w.bw.Write(table); err != nil {
		return err
	}
	var hdr [headerSize]byte
	var foot [footerSize]byte
	fileSize := uint64(tableOff) + uint64(len(table)) + footerSize
	encodeHeader(hdr[:], foot[:], id, fileSize, uint64(tableOff), uint64(len(table)), checksum(table), len(w.entries))
	if _, err := w.bw.Write(foot[:]); err != nil {
		return err
	}
	if err := w.bw.Flush(); err != nil {
		return err
	}
	if _, err := tmp.WriteAt(hdr[:], 0); err != nil {
		return err
	}
	return nil
}

// publish writes the file for key to a temporary name in dir, then renames it
// over path and syncs the directory, so a reader sees the old file or the
// new one, never a mix.
func publish(dir, path, key string, id Identity, old *File, clients []Client) error {
	tmp, err := os.CreateTemp(dir, tempPrefix+key+"-*") // O_EXCL, mode 0600
	if err != nil {
		return &Error{Path: path, Reason: ReasonIO, Err: err}
	}
	werr := writeFile(tmp, path, key, id, old, clients)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		var pe *Error
		if errors.As(err, &pe) {
			return err
		}
		return &Error{Path: path, Reason: ReasonIO, Err: err}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return &Error{Path: path, Reason: ReasonIO, Err: err}
	}
	return nil
}
