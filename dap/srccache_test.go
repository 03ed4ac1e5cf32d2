package dap

import (
	"fmt"
	"reflect"
	"testing"
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
