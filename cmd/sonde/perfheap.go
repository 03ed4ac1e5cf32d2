package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"unsafe"

	"golang.org/x/sys/unix"
)

// perfHeapBytes is the stretch of heap `sonde perf` asks to be backed by
// transparent huge pages: about what a run on a large recording uses (its
// peak RSS is ~26 MB, the binary's pages included).
const perfHeapBytes = 16 << 20

// hugeHeapMinInput is the smallest recording prepareHeap grows the heap
// for: the collection that frees the ballast costs ~3 ms of CPU, which a
// small recording does not win back (its heap stays in the stretch the
// start-up already faulted in).
const hugeHeapMinInput = 64 << 20

// perfGCPercent is the garbage collector's target for `sonde perf`: the
// heap may grow to 3x what is live before a collection, against 2x by
// default. The loads before the first samples (symbol tables, indexes,
// caches) allocate a few MB, which met one to three collections on a small
// recording (~8 ms of CPU of ~70, their page faults included); on a 1 GB
// one the peak RSS is the same.
const perfGCPercent = 200

// prepareHeap readies the Go heap for a `sonde perf` run. Every first touch
// of a 4 KiB page costs a page fault, ~20 µs of CPU on the PVM guest we
// measure on (its page tables are shadowed; a 2 MiB huge page costs ~0.3 µs
// per 4 KiB there), and a 1 GB recording's run took ~2,600 faults, ~1,200
// of them in the heap it grew after the start-up. With transparent huge
// pages in their default mode ("madvise") the heap gets 4 KiB pages, as the
// Go runtime asks for none, and the runtime maps the heap in steps, each a
// new mapping without the advice. So the heap is grown at once by a ballast
// of perfHeapBytes, never touched (fresh memory is known to be zero); the
// heap's untouched stretch, from what the start-up used to the ballast's
// end, is advised MADV_HUGEPAGE and the ballast freed by a collection, so
// the allocations that follow land there and fault 2 MiB at a time. Where
// THP is off the advice does nothing. Only for recordings of at least
// hugeHeapMinInput (pipes: never). SONDE_PERF_SMALLPAGES=1 leaves the heap
// alone, for measuring; GOGC, when set, keeps its word.
func prepareHeap(input string) {
	percent := perfGCPercent
	if os.Getenv("GOGC") != "" {
		percent = debug.SetGCPercent(-1) // GOGC's, set again below
	}
	debug.SetGCPercent(percent)
	if st, err := os.Stat(input); err != nil || !st.Mode().IsRegular() || st.Size() < hugeHeapMinInput ||
		os.Getenv("SONDE_PERF_SMALLPAGES") != "" {
		return
	}
	// The ballast would start a collection of its own (it is more than
	// the heap's goal), and a second one to free it: none till then.
	debug.SetGCPercent(-1)
	defer debug.SetGCPercent(percent)
	ballast := make([]byte, perfHeapBytes)
	// A large object's pages come from the lowest free ones: probe is at
	// the frontier of the heap the start-up touched, and the rest of its
	// mapping up to the ballast is untouched too.
	probe := make([]byte, 40<<10)
	const huge = 2 << 20
	lo := (uintptr(unsafe.Pointer(unsafe.SliceData(probe))) + uintptr(len(probe)) + huge - 1) &^ (huge - 1)
	base := uintptr(unsafe.Pointer(unsafe.SliceData(ballast)))
	hi := (base + perfHeapBytes) &^ (huge - 1)
	if lo > base || lo < base-perfHeapBytes {
		lo = (base + huge - 1) &^ (huge - 1) // not below the ballast: the ballast alone
	}
	if lo < hi {
		// The advice is the mapping's, so it outlives the ballast; the
		// range is given as numbers, as it reaches past the ballast.
		unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_HUGEPAGE)
	}
	runtime.KeepAlive(probe)
	ballast = nil
	runtime.GC()
}
