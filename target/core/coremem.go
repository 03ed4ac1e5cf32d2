package core

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"

	"golang.org/x/sys/unix"
)

// coreMemory is the core file mapped read-only: the bytes of every PT_LOAD
// segment, read in place. Mapping costs the same for any size of core; pages
// are read from disk only when touched.
type coreMemory struct {
	path string
	mu   sync.RWMutex // Close takes it exclusively, so no read sees an unmapped range
	data []byte       // nil once closed
}

// errCoreClosed is returned by reads after Close.
var errCoreClosed = errors.New("core: the core file is closed")

func mapCore(f *os.File, size uint64) (*coreMemory, error) {
	if size == 0 || size > 1<<62 {
		return nil, &FormatError{0, fmt.Sprintf("cannot map a %d-byte file", size), nil}
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: f.Name(), Err: err}
	}
	return &coreMemory{path: f.Name(), data: data}, nil
}

// read copies core bytes at file offset off into p. If the file was cut
// short since it was mapped, touching the missing pages raises SIGBUS; that
// is turned into an error instead of killing the program.
func (m *coreMemory) read(p []byte, off uint64) (n int, err error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.data == nil {
		return 0, errCoreClosed
	}
	if off >= uint64(len(m.data)) {
		return 0, fmt.Errorf("core: file offset %d is past the %d mapped bytes", off, len(m.data))
	}
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			var fault interface{ Addr() uintptr }
			if e, ok := r.(error); ok && errors.As(e, &fault) {
				n, err = 0, fmt.Errorf("core: %s changed while open: reading file offset %d faulted", m.path, off)
				return
			}
			panic(r)
		}
	}()
	return copy(p, m.data[off:]), nil
}

func (m *coreMemory) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.data == nil {
		return nil
	}
	err := unix.Munmap(m.data)
	m.data = nil
	return err
}
