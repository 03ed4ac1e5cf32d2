package main

import "runtime"

// sonde records no heap profiles (SONDE_CPUPROFILE is a CPU profile), yet
// runtime/pprof being linked in keeps the runtime sampling allocations: one
// stack walk and bucket per ~512 KiB allocated, the buckets' 1.4 MB hash
// table faulted in page by page (~20 µs per fault on the VM we measure on).
func init() { runtime.MemProfileRate = 0 }
