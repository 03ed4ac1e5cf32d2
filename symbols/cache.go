package symbols

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"
)

// Cache shares opened binaries: every process that maps libc, and every
// client asking about it, uses one Binary and so one set of decoded units.
// A file is identified by device, inode, size and modification time, so a
// rebuilt binary at the same path is opened afresh. Safe for concurrent use.
type Cache struct {
	opts *Options

	mu      sync.Mutex
	entries map[fileKey]*cacheEntry
	closed  bool
}

type fileKey struct {
	dev, ino uint64
	size     int64
	mtime    time.Time
}

type cacheEntry struct {
	once sync.Once
	bin  *Binary
	err  error
}

// NewCache returns a cache whose binaries are opened with opts.
func NewCache(opts *Options) *Cache {
	return &Cache{opts: opts, entries: map[fileKey]*cacheEntry{}}
}

// ErrCacheClosed is returned by Open after Close.
var ErrCacheClosed = errors.New("symbols: cache closed")

// Open returns the shared Binary for the file at path, opening it on first
// use. Callers must not Close it: the cache owns it.
func (c *Cache) Open(path string) (*Binary, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &Error{File: path, Op: "stat", Err: err}
	}
	key := fileKey{size: st.Size(), mtime: st.ModTime()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		key.dev, key.ino = uint64(sys.Dev), sys.Ino
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrCacheClosed
	}
	e := c.entries[key]
	if e == nil {
		e = &cacheEntry{}
		c.entries[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.bin, e.err = Open(path, c.opts) })
	return e.bin, e.err
}

// Close closes every binary the cache opened.
func (c *Cache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for _, e := range c.entries {
		if e.bin != nil {
			errs = append(errs, e.bin.Close())
		}
	}
	c.entries = nil
	return errors.Join(errs...)
}
