package dap

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// TestFrameSource: the cached Source is sourceOf's, made once per path.
func TestFrameSource(t *testing.T) {
	for _, p := range []string{"/rustc/abc/library/std/src/rt.rs", "/a/./b/../c.c", "rel/x.c", "./y.c"} {
		got, again := frameSource(p), frameSource(p)
		if got != again {
			t.Errorf("frameSource(%q) made a second Source", p)
		}
		if want := sourceOf(p); !reflect.DeepEqual(got, want) {
			t.Errorf("frameSource(%q) = %+v, want %+v", p, *got, *want)
		}
	}
}

// TestHexAddr: what fmt's %x wrote before.
func TestHexAddr(t *testing.T) {
	for _, a := range []uint64{0, 1, 0x401136, 0x7ffff7dd1000, ^uint64(0)} {
		if got, want := hexAddr(a), fmt.Sprintf("0x%x", a); got != want {
			t.Errorf("hexAddr(%d) = %q, want %q", a, got, want)
		}
	}
}

// TestRunWarm: work runs, on an idle worker when there is one, and two at
// once each run.
func TestRunWarm(t *testing.T) {
	done := make(chan int, 3)
	for i := 0; i < 3; i++ {
		runWarm(func() { done <- i })
	}
	seen := map[int]bool{}
	for i := 0; i < 3; i++ {
		select {
		case n := <-done:
			seen[n] = true
		case <-time.After(waitLimit):
			t.Fatalf("work %d of 3 did not run", i+1)
		}
	}
	if len(seen) != 3 {
		t.Errorf("ran %v, want 0, 1 and 2", seen)
	}
}
