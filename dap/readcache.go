package dap

import (
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/variables"
)

// requestFrame is a frame whose memory reads go through a cache of pages
// for one request: listing a frame's variables reads a few bytes per
// variable, mostly from the same stack page, and each read of a live
// process is a system call (process_vm_readv, ~5-10 µs on a VM: a third
// of a warm `variables`). The cache lives for one request only, so that
// nothing older than the request is shown: threads stop independently and
// another thread may write this one's memory between two requests. A write
// through the frame empties it.
type requestFrame struct {
	*session.Frame
	pages map[uint64][]byte // page address -> its bytes (short: unreadable after)
}

// requestPageSize is the cache's unit: one read fetches it whole.
const requestPageSize = 4096

// maxRequestPages bounds a request's cache (a value may point anywhere).
const maxRequestPages = 64

// newRequestFrame returns f reading through a new cache (nil for none).
func newRequestFrame(f *session.Frame) variables.Frame {
	if f == nil {
		return nil
	}
	return &requestFrame{Frame: f, pages: map[uint64][]byte{}}
}

// ReadMemory implements variables.Frame: from the cached pages, each read
// whole from the target the first time it is asked for.
func (f *requestFrame) ReadMemory(buf []byte, addr uint64) (int, error) {
	if len(buf) > requestPageSize || addr+uint64(len(buf)) < addr {
		return f.Frame.ReadMemory(buf, addr)
	}
	n := 0
	for n < len(buf) {
		a := addr + uint64(n)
		page := a &^ (requestPageSize - 1)
		b, ok := f.pages[page]
		if !ok {
			if len(f.pages) >= maxRequestPages {
				clear(f.pages)
			}
			full := make([]byte, requestPageSize)
			got, _ := f.Frame.ReadMemory(full, page)
			b = full[:max(got, 0)]
			f.pages[page] = b
		}
		off := int(a - page)
		if off >= len(b) {
			if n == 0 {
				// Unreadable here: the target says why (and how much).
				return f.Frame.ReadMemory(buf, addr)
			}
			return n, nil
		}
		n += copy(buf[n:], b[off:])
	}
	return n, nil
}

// WriteMemory implements variables.Writer: what was read is no longer what
// is there.
func (f *requestFrame) WriteMemory(addr uint64, data []byte) error {
	clear(f.pages)
	return f.Frame.WriteMemory(addr, data)
}

// WriteRegister implements variables.Writer (a register may hold what a
// cached value's address was computed from).
func (f *requestFrame) WriteRegister(reg int, data []byte) error {
	clear(f.pages)
	return f.Frame.WriteRegister(reg, data)
}
