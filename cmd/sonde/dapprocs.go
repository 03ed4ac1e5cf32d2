package main

import (
	"os"
	"runtime"
)

// dapProcs gives `sonde dap` one more P than Go's default (the CPUs it may
// use), unless GOMAXPROCS says otherwise.
//
// The ptrace backend's tracer thread is locked to its goroutine and, while
// a step's legs come and go, spins on its P polling for the next trap
// (target/ptrace's spin). With as many Ps as CPUs, the adapter's other
// goroutines (the step's driver, the event goroutine, the stop's prefetch,
// the request loop whose read has returned) then share the Ps left: on a
// 2-CPU machine, one. A goroutine that became runnable waited for that P
// although the kernel had a CPU for it, and the round after a step took
// 2-4x as long, with 3-6x the adapter's CPU (Go's idle Ms spinning for
// work), in sessions driven by the DebugClient against the same build with
// GOMAXPROCS=3 (bench/dap/RESULTS.md, session 19). One more P lets the
// kernel, which sees the spin yield, share the CPUs.
func dapProcs() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	}
}
