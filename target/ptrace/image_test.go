package ptrace

import (
	"bytes"
	"testing"

	"github.com/sondedbg/sonde/memimage"
	"github.com/sondedbg/sonde/target"
)

func TestMemoryImage(t *testing.T) {
	tg, r := newTarget(t)
	path := build(t, "tp_hotloop.c")
	p := launch(t, tg, path, "0")
	th := mainThread(t, p)
	i := 0
	r.wait(t, &i, "entry", isStop(p))
	tick := symbol(t, p, path, "tick")
	// Made at entry, before any breakpoint dirtied the program's text.
	im, asid, err := tg.Backend().(*Backend).MemoryImage(p)
	if err != nil {
		t.Fatal(err)
	}
	runToBreakpoint(t, tg, r, &i, th, tick)
	files := map[string]bool{}
	for _, m := range im.Sections() {
		files[m.Section.Name()] = true
	}
	if !files[path] {
		t.Fatalf("no file section for the program's text; sections from %v", files)
	}
	// A breakpoint planted after the image was made: the image hides it too.
	bp, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: tick})
	if err != nil {
		t.Fatal(err)
	}
	other := symbol(t, p, path, "other_entry")
	if _, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: other}); err != nil {
		t.Fatal(err)
	}
	check := func(what string, addr uint64, n int) {
		t.Helper()
		got := make([]byte, n)
		if k, err := im.ReadFull(got, asid, addr); err != nil || k != n {
			t.Fatalf("%s: image read %d %v", what, k, err)
		}
		if want := readN(t, p, addr, n); !bytes.Equal(got, want) {
			t.Fatalf("%s: image % x, target % x", what, got[:16], want[:16])
		}
	}
	check("text with breakpoints", tick&^0xfff, 8192)
	check("stack (fallback)", mustRegs(t, th).SP(), 256)
	if got := make([]byte, 1); true {
		im.ReadFull(got, asid, other)
		if got[0] == 0xcc {
			t.Fatal("image shows the int3")
		}
	}
	// Removing the breakpoint clears the overlay; the bytes stay the same.
	if err := tg.RemoveBreakpoint(bp); err != nil {
		t.Fatal(err)
	}
	check("after removal", tick, 16)
	// A write into text drops the file's sections: reads then come from the process.
	orig := readN(t, p, tick, 1)
	if _, err := p.WriteMemory(tick, []byte{0x90}); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 1)
	im.ReadFull(got, asid, tick)
	if got[0] != 0x90 {
		t.Fatalf("image after a write: %x", got[0])
	}
	p.WriteMemory(tick, orig)
	// Another address space is not this one.
	if _, err := im.ReadFull(got, memimage.ASID{Space: 1, Generation: 0}, tick); err == nil {
		t.Fatal("read in a foreign address space succeeded")
	}
}

func mustRegs(t *testing.T, th *target.Context) *target.Registers {
	t.Helper()
	r, err := th.Registers()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
