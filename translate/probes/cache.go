package probes

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
)

// Process is what probes need of a process whose threads are all stopped
// (ptrace.Halted implements it).
type Process interface {
	PID() int
	Syscall(nr int, args ...uint64) (uint64, error)
	ReadRaw(addr uint64, buf []byte) (int, error)
	Read(addr uint64, buf []byte) (int, error)
	WriteText(addr uint64, data []byte) error
	WriteData(addr uint64, data []byte) error
	ThreadPCs() map[int]uint64
	StepOut(tid int, lo, hi uint64, max int) error
}

const (
	pageSize = 4096
	// cacheSize is one code cache: the first dataSize bytes hold counters
	// (on pages of their own: stores next to executing code would make the
	// CPU flush its pipeline as for self-modifying code), the rest code.
	cacheSize = 1 << 20
	dataSize  = 512 << 10
	// reach is how far a rel32 goes, less a margin for the cache's own size.
	reach = 1<<31 - cacheSize - pageSize
)

// cache is a code cache mapped in the target near one module.
type cache struct {
	lo           uint64
	modLo, modHi uint64 // the module it serves
	module       string
	dataNext     uint64
	codeNext     uint64
	unregister   func() // from the backend's generated code
}

func (c *cache) hi() uint64 { return c.lo + cacheSize }

func (c *cache) contains(a uint64) bool { return a >= c.lo && a < c.hi() }

// serves reports whether code at [lo, hi) can reach the whole cache with rel32.
func (c *cache) serves(lo, hi uint64) bool {
	return within(c.lo, lo, hi) && within(c.hi(), lo, hi)
}

func within(a, lo, hi uint64) bool {
	if a >= lo {
		return a-lo <= reach
	}
	return hi-a <= reach
}

// allocData returns the address of n bytes of data, 16-byte aligned.
func (c *cache) allocData(n int) (uint64, error) {
	a := (c.dataNext + 15) &^ 15
	if a+uint64(n) > c.lo+dataSize {
		return 0, fmt.Errorf("code cache at %#x: no room for %d more bytes of data", c.lo, n)
	}
	c.dataNext = a + uint64(n)
	return a, nil
}

// allocCode returns room for n bytes of code, 16-byte aligned.
func (c *cache) allocCode(n int) (uint64, error) {
	a := (c.codeNext + 15) &^ 15
	if a+uint64(n) > c.hi() {
		return 0, fmt.Errorf("code cache at %#x is full", c.lo)
	}
	c.codeNext = a + uint64(n)
	return a, nil
}

// mmapMinAddr is the lowest address the kernel maps.
func mmapMinAddr() uint64 {
	b, err := os.ReadFile("/proc/sys/vm/mmap_min_addr")
	if err == nil {
		if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && v >= pageSize {
			return v
		}
	}
	return 1 << 16
}

// heapGap keeps caches this far above the end of an executable and of the
// heap, where brk grows (malloc would fall back to mmap, but the program
// would not behave as it does untraced).
const heapGap = 1 << 30

// candidates returns addresses where a cache could go for a module at
// [modLo, modHi), nearest first: the top of each free gap below the module
// and the bottom of each free gap above it, within rel32 reach.
func candidates(regions []target.MemoryRegion, modLo, modHi uint64, minAddr uint64) []uint64 {
	rs := append([]target.MemoryRegion(nil), regions...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Addr < rs[j].Addr })
	type gap struct {
		lo, hi    uint64
		afterHeap bool
	}
	var gaps []gap
	prev, prevName := minAddr, ""
	prevModule := false
	for _, r := range rs {
		if r.Addr > prev {
			gaps = append(gaps, gap{prev, r.Addr, prevName == "[heap]" || prevModule})
		}
		if end := r.Addr + r.Size; end > prev {
			prev, prevName = end, r.FileName
			prevModule = end == modHi
		}
	}
	const top = 0x7fff_ffff_f000 // user space ends below
	if prev < top {
		gaps = append(gaps, gap{prev, top, prevName == "[heap]" || prevModule})
	}
	var out []uint64
	for _, g := range gaps {
		if g.hi-g.lo < cacheSize {
			continue
		}
		if g.hi <= modLo {
			out = append(out, (g.hi-cacheSize)&^(pageSize-1))
		} else if g.lo >= modHi {
			lo := (g.lo + pageSize - 1) &^ (pageSize - 1)
			if g.afterHeap {
				lo += heapGap
			}
			if lo+cacheSize <= g.hi {
				out = append(out, lo)
			}
		}
	}
	var ok []uint64
	for _, a := range out {
		if within(a, modLo, modHi) && within(a+cacheSize, modLo, modHi) {
			ok = append(ok, a)
		}
	}
	dist := func(a uint64) uint64 {
		if a >= modHi {
			return a - modHi
		}
		return modLo - a
	}
	sort.Slice(ok, func(i, j int) bool { return dist(ok[i]) < dist(ok[j]) })
	return ok
}

// errnoOf turns a raw system call result into an error.
func errnoOf(ret uint64) error {
	if int64(ret) < 0 && int64(ret) > -4096 {
		return unix.Errno(-int64(ret))
	}
	return nil
}

// mapCache maps a code cache within rel32 reach of the module at
// [modLo, modHi), with an injected mmap(MAP_FIXED_NOREPLACE) at the nearest
// free places.
func mapCache(p Process, regions []target.MemoryRegion, module string, modLo, modHi uint64) (*cache, error) {
	cands := candidates(regions, modLo, modHi, mmapMinAddr())
	if len(cands) == 0 {
		return nil, fmt.Errorf("no free %d KiB within ±2 GiB of %s [%#x, %#x)", cacheSize>>10, module, modLo, modHi)
	}
	var errs []string
	for i, a := range cands {
		if i == 8 {
			break
		}
		ret, err := p.Syscall(unix.SYS_MMAP, a, cacheSize, unix.PROT_READ|unix.PROT_WRITE|unix.PROT_EXEC,
			unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE, ^uint64(0), 0)
		if err != nil {
			return nil, fmt.Errorf("code cache for %s: injecting mmap: %w", module, err)
		}
		if err := errnoOf(ret); err != nil {
			errs = append(errs, fmt.Sprintf("%#x: %v", a, err))
			continue
		}
		if ret != a {
			// A kernel without MAP_FIXED_NOREPLACE took it as a hint.
			p.Syscall(unix.SYS_MUNMAP, ret, cacheSize)
			errs = append(errs, fmt.Sprintf("%#x: mapped at %#x instead", a, ret))
			continue
		}
		return &cache{lo: a, modLo: modLo, modHi: modHi, module: module, dataNext: a, codeNext: a + dataSize}, nil
	}
	return nil, fmt.Errorf("code cache for %s: mmap failed at %s", module, strings.Join(errs, ", "))
}

// unmap frees the cache (munmap injected).
func (c *cache) unmap(p Process) error {
	ret, err := p.Syscall(unix.SYS_MUNMAP, c.lo, cacheSize)
	if err == nil {
		err = errnoOf(ret)
	}
	if err == nil && c.unregister != nil {
		c.unregister()
	}
	if err != nil {
		return fmt.Errorf("free code cache at %#x: %w", c.lo, err)
	}
	return nil
}
