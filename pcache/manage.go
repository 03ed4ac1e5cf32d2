package pcache

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Entry is one cache file as the cache directory shows it.
type Entry struct {
	Key  string
	Path string
	Size int64
	Used time.Time // last stored or loaded (the file's modification time)
}

// Entries lists the cache's files, most recently used first. A missing
// directory is an empty cache.
func (c *Cache) Entries() ([]Entry, error) {
	ents, err := os.ReadDir(c.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, fileSuffix) || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, Entry{Key: strings.TrimSuffix(name, fileSuffix), Path: filepath.Join(c.Dir, name), Size: fi.Size(), Used: fi.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Used.After(out[j].Used) })
	return out, nil
}

// SectionInfo describes a section without its data.
type SectionInfo struct {
	Client        string
	ClientVersion uint32
	Name          string
	Size          int
}

// Verify runs every check a load runs on one cache file (all but the source
// file's identity, which only its user knows) and describes what it holds,
// or returns the *Error that says why a load would reject it.
func (c *Cache) Verify(e Entry) (Identity, []SectionInfo, error) {
	f, err := OpenFile(e.Path, nil)
	if err != nil {
		return Identity{}, nil, err
	}
	defer f.Close()
	var secs []SectionInfo
	for _, s := range f.Sections() {
		secs = append(secs, SectionInfo{Client: s.Client, ClientVersion: s.ClientVersion, Name: s.Name, Size: len(s.Data)})
	}
	return f.Identity, secs, nil
}

// Clear removes every cache file (under the cache's lock, so no writer is
// publishing one meanwhile) and returns how many and how many bytes.
func (c *Cache) Clear() (files int, bytes int64, err error) {
	if _, err := os.Stat(c.Dir); errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	unlock, err := c.lock()
	if err != nil {
		return 0, 0, err
	}
	defer unlock()
	ents, err := c.Entries()
	if err != nil {
		return 0, 0, err
	}
	for _, e := range ents {
		if err := os.Remove(e.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return files, bytes, err
		}
		files++
		bytes += e.Size
	}
	return files, bytes, nil
}
