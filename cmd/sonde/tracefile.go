package main

import (
	"fmt"
	"os"
	"runtime/trace"
)

// startTrace writes a runtime execution trace to $SONDE_TRACE when it is
// set: which goroutine ran, waited or was blocked when, for finding what a
// command's wall time waits on (a CPU profile shows only where CPU went).
// Read it with `go tool trace FILE` or `go tool trace -pprof=sync FILE`.
func startTrace() (stop func()) {
	path := os.Getenv("SONDE_TRACE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sonde: SONDE_TRACE: %v\n", err)
		return func() {}
	}
	if err := trace.Start(f); err != nil {
		fmt.Fprintf(os.Stderr, "sonde: SONDE_TRACE: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() { trace.Stop(); f.Close() }
}
