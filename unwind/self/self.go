// Package self is a ready-made client of the unwind engine for the current
// process: it captures the calling goroutine's registers with a small
// assembly function, copies its stack at once (so the walk sees a consistent
// stack even if Go later moves it), and reads everything else — code bytes,
// other stacks — from the process's own memory with process_vm_readv, which
// fails cleanly on unmapped addresses instead of faulting.
//
// Modules come from /proc/self/maps; unwind tables and symbols from the
// mapped files (package unwind/snapshot). Go code is unwound through the
// .debug_frame the Go linker emits; C code (cgo, libc) through .eh_frame.
package self

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/memimage"
	"github.com/sondedbg/sonde/unwind"
	"github.com/sondedbg/sonde/unwind/snapshot"
)

// captureRegisters is in capture_amd64.s.
//
//go:noescape
func captureRegisters(r *[unwind.NumRegs]uint64)

// Process is the current process as an unwind target.
type Process struct {
	*snapshot.Process
	pid  int
	pool sync.Pool // *walker: a stack copy buffer and a reusable Thread
}

// walker is what one Backtrace needs, pooled between calls.
type walker struct {
	buf []byte
	th  *snapshot.Thread
}

// StackCopy is how many bytes of the calling goroutine's stack Backtrace
// copies (from its stack pointer up; a short copy where the memory ends).
// Frames beyond it are read live, which is exact only as long as Go does not
// move the goroutine's stack during the walk (it moves stacks only to grow or
// shrink them); callers that need very deep stacks exactly should Capture
// into a larger buffer.
const StackCopy = 64 << 10

// New reads the current process's mappings. Call it again after loading
// shared libraries (dlopen) to see them.
func New(opts *snapshot.Options) (*Process, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, fmt.Errorf("self: %w", err)
	}
	defer f.Close()
	maps, err := snapshot.ReadMaps(f)
	if err != nil {
		return nil, fmt.Errorf("self: %w", err)
	}
	pid := os.Getpid()
	im := memimage.New("self")
	im.SetFallback(func(p []byte, _ memimage.ASID, addr uint64) (int, error) {
		return readSelf(pid, p, addr)
	})
	for i, m := range maps {
		if m.Exec && !m.Write && m.Path != "" {
			// Code is read from the mapped files (no system call per read).
			if sec, err := memimage.NewFileSection(m.Path, m.Offset, m.End-m.Start); err == nil {
				im.Add(sec, memimage.AnyASID, m.Start)
			}
		}
		if m.Name == "[vdso]" {
			// The vDSO's image exists only in memory: give it to the module
			// so its unwind tables and symbols can be read.
			b := make([]byte, m.End-m.Start)
			if n, _ := readSelf(pid, b, m.Start); n == len(b) {
				maps[i].Data = b
			}
		}
	}
	sp, err := snapshot.NewWithImage(im, memimage.AnyASID, maps, opts)
	if err != nil {
		return nil, err
	}
	p := &Process{Process: sp, pid: pid}
	p.pool.New = func() any { return &walker{buf: make([]byte, StackCopy)} }
	return p, nil
}

// readSelf reads this process's memory without risking a fault.
func readSelf(pid int, p []byte, addr uint64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	local := []unix.Iovec{{Base: &p[0]}}
	local[0].SetLen(len(p))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if n > 0 {
		return n, nil
	}
	if err != nil {
		return 0, fmt.Errorf("self: reading %#x: %w", addr, err)
	}
	return 0, nil
}

// Backtrace unwinds the calling goroutine's stack. Frame 0 is inside
// Backtrace's own capture (package self); its callers follow.
func (p *Process) Backtrace(opts unwind.BacktraceOptions) (unwind.Trace, error) {
	w := p.pool.Get().(*walker)
	defer p.pool.Put(w)
	regs, stack, err := p.capture(w.buf)
	if err != nil {
		return unwind.Trace{}, err
	}
	sp, _ := regs.Get(arch.DwarfRSP)
	if w.th == nil {
		w.th = p.Thread(&regs, stack, sp)
	} else {
		w.th.Reset(&regs, stack, sp)
	}
	return w.th.Backtrace(opts)
}

// Capture captures the calling goroutine's registers and copies up to
// len(buf) bytes of its stack into buf, for a later walk with Thread (frame 0
// of that walk is inside package self, frame 1 or 2 is Capture's caller).
func (p *Process) Capture(buf []byte) (unwind.Registers, []byte, error) {
	return p.capture(buf)
}

// capture takes the registers and the stack copy with no stack growth in
// between: it first makes sure the goroutine has headroom, and it retries if
// the stack moved anyway (a garbage collection may shrink stacks).
//
//go:noinline
func (p *Process) capture(buf []byte) (unwind.Registers, []byte, error) {
	var regs unwind.Registers
	for try := 0; try < 4; try++ {
		headroom()
		var marker byte
		before := uintptrOf(&marker)
		captureRegisters(&regs.Values)
		sp := regs.Values[arch.DwarfRSP]
		n, err := readSelf(p.pid, buf, sp)
		if n == 0 {
			return regs, nil, err
		}
		if uintptrOf(&marker) == before {
			// Every register is the caller's real value except rdi, which
			// captureRegisters used for its argument.
			regs.Known = (1<<unwind.NumRegs - 1) &^ (1 << arch.DwarfRDI)
			return regs, buf[:n], nil
		}
	}
	return regs, nil, errStackMoving
}

var errStackMoving = fmt.Errorf("self: the goroutine's stack kept moving while it was copied")

// headroom grows the goroutine's stack now, so the few calls between
// capturing registers and copying the stack cannot move it.
//
//go:noinline
func headroom() byte {
	var pad [8 << 10]byte
	return touch(pad[:])
}

//go:noinline
func touch(b []byte) byte { return b[len(b)-1] }
