package main

import (
	"runtime"
	"testing"
)

// TestMemProfileOff: the command samples no allocations (see memprofile.go).
func TestMemProfileOff(t *testing.T) {
	if runtime.MemProfileRate != 0 {
		t.Fatalf("runtime.MemProfileRate = %d, want 0", runtime.MemProfileRate)
	}
}
