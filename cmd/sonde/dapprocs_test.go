package main

import (
	"runtime"
	"testing"
)

// sonde dap runs with one P more than the default, so that the tracer
// thread's spin does not leave its other goroutines one P short; a
// GOMAXPROCS the user set is kept.
func TestDAPProcs(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)

	t.Setenv("GOMAXPROCS", "")
	dapProcs()
	if got := runtime.GOMAXPROCS(0); got != before+1 {
		t.Fatalf("GOMAXPROCS %d after dapProcs, want %d", got, before+1)
	}

	runtime.GOMAXPROCS(before)
	t.Setenv("GOMAXPROCS", "1")
	dapProcs()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("GOMAXPROCS %d after dapProcs with GOMAXPROCS set, want it left at %d", got, before)
	}
}
