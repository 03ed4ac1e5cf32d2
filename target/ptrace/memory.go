package ptrace

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
)

// Memory I/O runs on the caller's goroutine: process_vm_readv for reads (one
// syscall, no tracer hop), /proc/PID/mem for writes (it writes into read-only
// text, as breakpoints need). Reads hide software breakpoints; writes under one
// update its saved byte and keep it planted.

// readRaw reads what is in memory (int3 bytes included), returning the valid
// prefix length and the error at its end.
func readRaw(p *process, addr uint64, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	done := 0
	for done < len(buf) {
		n, err := processVMReadv(p.pid, buf[done:], uintptr(addr)+uintptr(done))
		if err == unix.EINTR {
			continue
		}
		if n > 0 {
			done += n
			continue
		}
		// process_vm_readv stops at the first page it cannot read;
		// /proc/PID/mem can read more (it forces access, e.g. PROT_NONE pages).
		if p.mem != nil && addr+uint64(done) <= math.MaxInt64 {
			m, err2 := p.mem.ReadAt(buf[done:], int64(addr)+int64(done))
			if m > 0 {
				done += m
				continue
			}
			if err2 != nil && err == nil {
				err = err2
			}
		}
		if err == nil {
			err = unix.EIO
		}
		return done, err
	}
	return done, nil
}

// processVMReadv is one process_vm_readv(2) of buf from addr in pid. It is
// a raw system call (it copies memory, it never waits): a stack walk makes
// a few per stop, and the ordinary way of entering a system call wakes the
// Go runtime's monitor thread when it sleeps (see wait4).
func processVMReadv(pid int, buf []byte, addr uintptr) (int, error) {
	local := unix.Iovec{Base: &buf[0]}
	local.SetLen(len(buf))
	remote := unix.RemoteIovec{Base: addr, Len: len(buf)}
	n, _, e := unix.RawSyscall6(unix.SYS_PROCESS_VM_READV, uintptr(pid),
		uintptr(unsafe.Pointer(&local)), 1, uintptr(unsafe.Pointer(&remote)), 1, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// readMemory reads like the program sees it: software breakpoints hidden.
func (b *Backend) readMemory(p *process, addr uint64, buf []byte) (int, error) {
	owner := p.memOwner
	owner.memMu.RLock()
	defer owner.memMu.RUnlock()
	n, err := readRaw(p, addr, buf)
	owner.shadow.Hide(addr, buf[:n])
	return n, err
}

func memoryError(addr uint64, n int, err error) error {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		errno = unix.EIO
	}
	return &target.MemoryError{Addr: addr + uint64(n), Valid: n, Err: errno}
}

// ReadMemory implements target.Backend.
func (b *Backend) ReadMemory(ctx *target.Context, addr uint64, buf []byte) (int, error) {
	p, err := b.procOf(ctx, "read memory")
	if err != nil {
		return 0, err
	}
	n, err := b.readMemory(p, addr, buf)
	if err != nil {
		return n, memoryError(addr, n, err)
	}
	return n, nil
}

// WriteMemory implements target.Backend.
func (b *Backend) WriteMemory(ctx *target.Context, addr uint64, data []byte) (int, error) {
	p, err := b.procOf(ctx, "write memory")
	if err != nil {
		return 0, err
	}
	owner := p.memOwner
	owner.memMu.Lock()
	defer owner.memMu.Unlock()
	buf := owner.shadow.Write(addr, data, owner.imagesSetOriginal)
	owner.imagesWritten(addr, uint64(len(buf)))
	if p.mem == nil {
		return 0, memoryError(addr, 0, unix.ESRCH)
	}
	if addr > math.MaxInt64 || addr+uint64(len(buf)) > math.MaxInt64 {
		return 0, memoryError(addr, 0, unix.EIO)
	}
	n, err := p.mem.WriteAt(buf, int64(addr))
	if err != nil || n < len(buf) {
		// Bytes under breakpoints past the failure were not written: their
		// saved values must not pretend they were.
		if err == nil {
			err = unix.EIO
		}
		return n, memoryError(addr, n, err)
	}
	return n, nil
}

// MemoryMap implements target.Backend from /proc/PID/maps.
func (b *Backend) MemoryMap(ctx *target.Context) ([]target.MemoryRegion, error) {
	p, err := b.procOf(ctx, "memory map")
	if err != nil {
		return nil, err
	}
	return readMaps(p.pid)
}

func readMaps(pid int) ([]target.MemoryRegion, error) {
	data, err := readFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, target.Errorf(target.CodeAlreadyExited, "memory map", target.ProcessID(pid), err)
	}
	m, err := parseMaps(data)
	if err != nil {
		return nil, target.Errorf(target.CodeOther, "memory map", target.ProcessID(pid), err)
	}
	return m, nil
}
