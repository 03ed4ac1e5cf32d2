package main

import (
	"os"
	"runtime/debug"
)

// dapGCPercent is the garbage collector's target for `sonde dap`: the heap
// may grow to 5x what is live before a collection, against 2x by default.
//
// An adapter's live heap is small (a few MB: symbol files and persisted
// indexes are mapped, not on the heap), so with the default a collection
// ran every 2-4 MB allocated, and the first stop's requests, which allocate
// that much, met one in every session traced (runtime/trace): its
// stop-the-world phases (4-15 ms of wall on a loaded 2-core machine), a
// mark worker on one of the two cores and assists charged to the request.
// An editor waits for those requests; the memory is that of a few more MB.
const dapGCPercent = 400

// relaxGC sets dapGCPercent unless GOGC says otherwise.
func relaxGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(dapGCPercent)
	}
}
