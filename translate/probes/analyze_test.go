package probes

import (
	"strings"
	"testing"
)

// Functions as gcc -O2 emits them (bytes from testdata/pr_count.c and
// pr_latency.cc), at a PIE-like address.
const fnAddr = 0x5555_5555_1230

var (
	hotCode  = []byte{0x48, 0x8d, 0x44, 0x7f, 0x01, 0xc3}                               // lea 0x1(%rdi,%rdi,2),%rax; ret
	ripCode  = []byte{0x48, 0x8b, 0x05, 0xd9, 0x2d, 0x00, 0x00, 0x48, 0x01, 0xf8, 0xc3} // mov 0x2dd9(%rip),%rax; add %rdi,%rax; ret
	loopCode = []byte{0x31, 0xc0, 0x48, 0x01, 0xf8, 0x48, 0xff, 0xcf, 0x75, 0xf8, 0xc3} // xor; 1: add; dec; jnz 1b; ret
	padding  = []byte{0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00}       // cs nopw 0x0(%rax,%rax,1)
)

// checkTable checks a trampoline's table: contiguous entries covering the
// whole trampoline, every application PC inside the patched range or the
// jump back's target.
func checkTable(t *testing.T, code []byte, tab *Table, site Site) {
	t.Helper()
	if tab.Hi-tab.Lo != uint64(len(code)) {
		t.Fatalf("table covers %d bytes, code is %d", tab.Hi-tab.Lo, len(code))
	}
	pc := tab.Lo
	for _, e := range tab.Entries {
		if e.Lo != pc || e.Hi <= e.Lo {
			t.Fatalf("entry [%#x, %#x) after %#x: not contiguous", e.Lo, e.Hi, pc)
		}
		pc = e.Hi
		if e.AppPC < site.Addr || e.AppPC > site.Addr+uint64(site.Len) {
			t.Errorf("entry [%#x, %#x) maps to %#x, outside [%#x, %#x]", e.Lo, e.Hi, e.AppPC, site.Addr, site.Addr+uint64(site.Len))
		}
		if got, ok := tab.Lookup(e.Lo); !ok || got.Lo != e.Lo {
			t.Errorf("Lookup(%#x) = %+v, %v", e.Lo, got, ok)
		}
	}
	if pc != tab.Hi {
		t.Fatalf("entries end at %#x, trampoline at %#x", pc, tab.Hi)
	}
	if _, ok := tab.Lookup(tab.Hi); ok {
		t.Errorf("Lookup past the end succeeded")
	}
}

func TestAnalyzeAndTables(t *testing.T) {
	cache := uint64(fnAddr - 0x100000)
	for _, c := range []struct {
		name    string
		code    []byte
		wantLen int
		why     string
	}{
		{"hot", hotCode, 5, ""},
		{"ripload", ripCode, 7, ""},
		{"loop", loopCode, 0, "inside the patched range"},
		{"tiny", []byte{0xc3}, 0, "does not fit"},
	} {
		fn := Function{Name: c.name, Lo: fnAddr, Code: c.code, Padding: padding}
		site, err := Analyze(fn, fnAddr)
		if c.why != "" {
			if err == nil || !strings.Contains(err.Error(), c.why) {
				t.Errorf("%s: %v, want an UnsafeError saying %q", c.name, err, c.why)
			}
			continue
		}
		if err != nil || site.Len != c.wantLen {
			t.Fatalf("%s: site %+v, %v; want %d bytes", c.name, site, err, c.wantLen)
		}
		code, tab, err := buildCount(site, cache, cache-64)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		checkTable(t, code, tab, site)
		if e, _ := tab.Lookup(tab.Lo); !e.Payload || e.AppPC != fnAddr {
			t.Errorf("%s: first entry %+v, want payload at the site", c.name, e)
		}
		if e, _ := tab.Lookup(tab.Hi - 1); e.Payload {
			t.Errorf("%s: last entry %+v is payload", c.name, e)
		}
		// Latency: entry and exit ranges (merged for hot: lea; ret).
		sites, hooks, err := latencySites(fn, fnAddr, newLatencyLayout(cache-latencyData))
		if err != nil {
			t.Fatalf("%s latency: %v", c.name, err)
		}
		for _, s := range sites {
			code, tab, err := buildRange(s, cache+0x1000, hooks)
			if err != nil {
				t.Fatalf("%s latency: %v", c.name, err)
			}
			checkTable(t, code, tab, s)
		}
	}
}

func TestExitsAndPadding(t *testing.T) {
	fn := Function{Name: "hot", Lo: fnAddr, Code: hotCode, Padding: padding}
	if n := padLen(fn); n != len(padding) {
		t.Errorf("padLen = %d, want %d", n, len(padding))
	}
	ex, err := Exits(fn)
	if err != nil || len(ex) != 1 || ex[0] != fnAddr+5 {
		t.Errorf("Exits = %x, %v", ex, err)
	}
	// A tail jump out of the function is an exit too.
	tail := Function{Name: "tail", Lo: fnAddr, Code: []byte{0x48, 0x83, 0xc7, 0x01, 0xe9, 0x00, 0x10, 0x00, 0x00}}
	if ex, err := Exits(tail); err != nil || len(ex) != 1 || ex[0] != fnAddr+4 {
		t.Errorf("Exits(tail) = %x, %v", ex, err)
	}
}

// FuzzAnalyze: any bytes as a function: analysis and trampoline generation
// return an error or a site whose range lies inside the function (and its
// padding), never panic.
func FuzzAnalyze(f *testing.F) {
	for _, c := range [][]byte{hotCode, ripCode, loopCode, {0xc3}, append(append([]byte(nil), hotCode...), padding...)} {
		f.Add(c, uint8(0), uint8(0))
	}
	f.Fuzz(func(t *testing.T, code []byte, off, pad uint8) {
		if len(code) == 0 {
			return
		}
		p := min(int(pad), len(code))
		fn := Function{Name: "f", Lo: fnAddr, Code: code[:len(code)-p], Padding: code[len(code)-p:]}
		if len(fn.Code) == 0 {
			return
		}
		addr := fnAddr + uint64(int(off)%len(fn.Code))
		if site, err := Analyze(fn, addr); err == nil {
			if site.Addr != addr || site.Len < JumpLen || site.Addr+uint64(site.Len) > fn.Hi() {
				t.Fatalf("site %+v outside the function [%#x, %#x)", site, fn.Lo, fn.Hi())
			}
			buildCount(site, fnAddr-0x10000, fnAddr-0x20000)
		}
		if sites, hooks, err := latencySites(fn, addr, newLatencyLayout(fnAddr-0x30000)); err == nil {
			for _, s := range sites {
				if s.Addr < fn.Lo || s.Addr+uint64(s.Len) > fn.Hi()+uint64(padLen(fn)) {
					t.Fatalf("latency site %+v outside the function", s)
				}
				buildRange(s, fnAddr-0x10000, hooks)
			}
		}
	})
}
