package dap

import (
	"bytes"
	"testing"

	"github.com/sondedbg/sonde/variables"
)

// TestRequestFrameReadsAsTheTarget compares reads through a request's page
// cache with reads of the target: at the stack pointer, across a page
// boundary, larger than a page, running into unmapped memory and at an
// unmapped address; and a write through the frame is seen by the next read.
func TestRequestFrameReadsAsTheTarget(t *testing.T) {
	p := dapclientProgram(t, "c")
	c, tid := launchToBP1(t, p)
	defer c.close()
	d, err := c.srv.current()
	if err != nil {
		t.Fatal(err)
	}
	th, err := d.thread(tid)
	if err != nil {
		t.Fatal(err)
	}
	fe, err := d.env(th, 0)
	if err != nil {
		t.Fatal(err)
	}
	rf := newRequestFrame(fe.frame)
	sp := fe.frame.SP()
	page := sp &^ (requestPageSize - 1)
	// The end of the stack's mapping: the first unreadable page above sp.
	top := page
	for {
		var b [1]byte
		if n, _ := fe.frame.ReadMemory(b[:], top); n != 1 {
			break
		}
		top += requestPageSize
	}
	cases := []struct {
		name string
		addr uint64
		size int
	}{
		{"at sp", sp, 8},
		{"twice the same", sp, 8},
		{"across a page boundary", page + requestPageSize - 3, 8},
		{"a page and more", sp, requestPageSize + 100},
		{"into unmapped memory", top - 4, 16},
		{"unmapped", 0x10, 8},
	}
	for _, tc := range cases {
		want := make([]byte, tc.size)
		wn, werr := fe.frame.ReadMemory(want, tc.addr)
		got := make([]byte, tc.size)
		gn, gerr := rf.ReadMemory(got, tc.addr)
		if gn != wn || !bytes.Equal(got[:gn], want[:wn]) || (gerr == nil) != (werr == nil && wn == tc.size) && gn == 0 {
			t.Errorf("%s (%d bytes at %#x): got %d bytes %x (%v), the target %d bytes %x (%v)", tc.name, tc.size, tc.addr, gn, got[:gn], gerr, wn, want[:wn], werr)
		}
	}
	// A write through the frame, then a read of what was cached.
	var old [4]byte
	if n, _ := rf.ReadMemory(old[:], sp); n != 4 {
		t.Fatalf("read at sp: %d bytes", n)
	}
	w, ok := rf.(variables.Writer)
	if !ok {
		t.Fatal("a request frame is not a variables.Writer")
	}
	flipped := []byte{^old[0], ^old[1], ^old[2], ^old[3]}
	if err := w.WriteMemory(sp, flipped); err != nil {
		t.Fatal(err)
	}
	var now [4]byte
	rf.ReadMemory(now[:], sp)
	if !bytes.Equal(now[:], flipped) {
		t.Errorf("after a write of %x at sp, the cache reads %x", flipped, now)
	}
	if err := w.WriteMemory(sp, old[:]); err != nil {
		t.Fatal(err)
	}
}
