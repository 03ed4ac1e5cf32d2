package pcache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

const (
	fileSuffix = ".pcache"
	tempPrefix = ".tmp-"
	lockName   = ".lock"
	// DefaultMaxBytes bounds a cache directory: a libc debug file inflates to
	// about 10 MB, so this holds the debug data of a few dozen libraries.
	DefaultMaxBytes = 512 << 20
	// touchEvery: a load marks the file used (for LRU pruning) at most this
	// often, so warm runs do not write metadata every time.
	touchEvery = time.Minute
	// staleTemp: temporary files older than this belong to a writer that
	// died; pruning removes them.
	staleTemp = time.Hour
)

// Cache is a directory of cache files, one per key.
type Cache struct {
	Dir string
	// MaxBytes bounds the total size of the cache files; Store prunes the
	// least recently used ones beyond it. 0 means no bound.
	MaxBytes int64
	// Background makes Load check the sections' checksums on the calling
	// goroutine alone, not on several cores: for a load off the critical
	// path (sonde perf's kernel symbols, loaded while the first samples
	// are read and unwound), whose checks on every core would take the
	// cores the critical path needs. The checks are the same.
	Background bool
}

// Default returns the user's cache, $XDG_CACHE_HOME/sonde/pcache (or
// ~/.cache/sonde/pcache), or nil when caching is disabled: SONDE_NO_CACHE
// set to anything but "" or "0", or SONDE_CACHE_DIR=off. SONDE_CACHE_DIR=D
// puts the cache in D/pcache.
func Default() *Cache {
	if v := os.Getenv("SONDE_NO_CACHE"); v != "" && v != "0" {
		return nil
	}
	dir := os.Getenv("SONDE_CACHE_DIR")
	switch dir {
	case "off":
		return nil
	case "":
		d, err := os.UserCacheDir()
		if err != nil {
			return nil
		}
		dir = filepath.Join(d, "sonde")
	}
	return &Cache{Dir: filepath.Join(dir, "pcache"), MaxBytes: DefaultMaxBytes}
}

// Path returns the file that holds key's data.
func (c *Cache) Path(key string) string { return filepath.Join(c.Dir, key+fileSuffix) }

func checkKey(key string) error {
	if key == "" || len(key) > 200 || strings.HasPrefix(key, ".") {
		return fmt.Errorf("pcache: bad key %q", key)
	}
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("pcache: bad key %q: only letters, digits, '-', '_' and '.'", key)
		}
	}
	return nil
}

// checkDir verifies that the cache directory is ours and others cannot write
// to it (they could replace files between our checks and our reads).
func (c *Cache) checkDir() error {
	fi, err := os.Stat(c.Dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &Error{Path: c.Dir, Reason: ReasonMissing, Err: err}
		}
		return &Error{Path: c.Dir, Reason: ReasonIO, Err: err}
	}
	if !fi.IsDir() {
		return fail(c.Dir, ReasonIO, "not a directory")
	}
	return checkOwner(c.Dir, fi)
}

// Load opens and validates key's file, which must have been derived from the
// source file identified by id, then hands each client its sections
// (clients with no sections in the file are not called). A missing file
// gives an error matching ErrMissing; any other failure an *Error with its
// Reason. Close the File when its sections are no longer used.
func (c *Cache) Load(key string, id Identity, clients ...Client) (*File, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if err := c.checkDir(); err != nil {
		return nil, err
	}
	f, err := openFile(c.Path(key), &id, c.Background)
	if err != nil {
		return nil, err
	}
	for _, cl := range clients {
		cid := cl.ID()
		secs := f.clientSections(cid.Name)
		if len(secs) == 0 {
			continue
		}
		if secs[0].ClientVersion != cid.Version {
			f.Close()
			return nil, fail(f.Path, ReasonClientVersion, "client %s wrote version %d, this is %d", cid.Name, secs[0].ClientVersion, cid.Version)
		}
		if err := cl.Resurrect(f, secs); err != nil {
			f.Close()
			return nil, &Error{Path: f.Path, Reason: ReasonClient, Err: fmt.Errorf("client %s: resurrect: %w", cid.Name, err)}
		}
	}
	c.touch(f.Path)
	return f, nil
}

// touch marks a file used, for pruning.
func (c *Cache) touch(path string) {
	fi, err := os.Stat(path)
	if err != nil || time.Since(fi.ModTime()) < touchEvery {
		return
	}
	now := time.Now()
	os.Chtimes(path, now, now)
}

// Store writes key's file from the clients' sections, keeping the sections
// of other clients that a valid file on disk already holds for the same
// source identity. Writers in several processes are serialized by a lock on
// the directory, so none loses another's sections.
func (c *Cache) Store(key string, id Identity, clients ...Client) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return &Error{Path: c.Dir, Reason: ReasonIO, Err: err}
	}
	if err := c.checkDir(); err != nil {
		return err
	}
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	defer unlock()
	path := c.Path(key)
	old, err := OpenFile(path, &id)
	if err != nil {
		old = nil // missing, stale or damaged: replaced
	}
	err = publish(c.Dir, path, key, id, old, clients)
	old.Close()
	if err != nil {
		return err
	}
	if c.MaxBytes > 0 {
		c.prune(c.MaxBytes, path)
	}
	return nil
}

// lock takes the directory's writer lock (flock on .lock).
func (c *Cache) lock() (func(), error) {
	lf, err := os.OpenFile(filepath.Join(c.Dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, &Error{Path: c.Dir, Reason: ReasonIO, Err: err}
	}
	for {
		err = unix.Flock(int(lf.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		lf.Close()
		return nil, &Error{Path: lf.Name(), Reason: ReasonIO, Err: err}
	}
	return func() {
		unix.Flock(int(lf.Fd()), unix.LOCK_UN)
		lf.Close()
	}, nil
}

// Prune removes the least recently used cache files until the directory
// holds at most maxBytes of them, and temporary files left by writers that
// died.
func (c *Cache) Prune(maxBytes int64) error {
	if err := c.checkDir(); err != nil {
		return err
	}
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	defer unlock()
	return c.prune(maxBytes, "")
}

// prune does Prune's work under the lock; keep is never removed (the file
// just written).
func (c *Cache) prune(maxBytes int64, keep string) error {
	ents, err := os.ReadDir(c.Dir)
	if err != nil {
		return &Error{Path: c.Dir, Reason: ReasonIO, Err: err}
	}
	type entry struct {
		path string
		size int64
		used time.Time
	}
	var files []entry
	var total int64
	for _, e := range ents {
		name := e.Name()
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		p := filepath.Join(c.Dir, name)
		switch {
		case strings.HasPrefix(name, tempPrefix):
			if time.Since(fi.ModTime()) > staleTemp {
				os.Remove(p)
			}
		case strings.HasSuffix(name, fileSuffix):
			files = append(files, entry{p, fi.Size(), fi.ModTime()})
			total += fi.Size()
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].used.Before(files[j].used) })
	var errs []error
	for _, f := range files {
		if total <= maxBytes {
			break
		}
		if f.path == keep {
			continue
		}
		if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		total -= f.size
	}
	return errors.Join(errs...)
}

// StatIdentity returns the identity of the file at path with the given
// build-id (read by the caller from the file's ELF note).
func StatIdentity(path string, buildID []byte) (Identity, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Identity{}, err
	}
	return Identity{BuildID: buildID, Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}, nil
}
