package ccond

import (
	"debug/elf"
	"errors"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/variables"
)

// siteAt opens testdata/bp_probe.c built with opt and returns the site at
// work's entry, or past its prologue (the line's first address after it).
func siteAt(t testing.TB, opt string, fn string, skip uint64) Site {
	t.Helper()
	path := testprog.Build(t, testprog.Spec{Sources: []string{"bp_probe.c"}, Flags: []string{opt, "-g"}, Name: "bp_probe" + opt})
	b, err := symbols.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	r, err := variables.For(b)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	for _, s := range syms {
		if s.Name == fn {
			return Site{PC: s.Value + skip, Bias: 0, Binary: b, Reader: r}
		}
	}
	t.Fatalf("no %s", fn)
	return Site{}
}

// TestCompile: at -O2 work's parameters are registers at its entry (i in
// edi: a 4-byte signed value of rdi), the globals static addresses; at -O0
// past the prologue (push rbp; mov rsp,rbp; two stores: 12 bytes) they are
// frame slots relative to rbp (the CFA rule there is rbp+16). C's
// conversions pick signed or unsigned comparisons and truncate constants.
func TestCompile(t *testing.T) {
	o2 := siteAt(t, "-O2", "work", 0)
	for _, tc := range []struct{ src, want string }{
		{"i == 5", "rdi:s32 == 5"},
		{"5 < i", "rdi:s32 > 5"},
		{"!i", "rdi:s32 == 0"},
		{"i", "rdi:s32 != 0"},
		{"k != -1 && i >= 3", "(rsi:s64 != -1 && rdi:s32 >= 3)"},
		{"!(i == 1 || k < 2)", "(rdi:s32 != 1 && rsi:s64 >= 2)"},
		{"i == 0xffffffff", "rdi:u32 == 0xffffffff"}, // int vs unsigned int: unsigned
		{"i < 4294967296", "rdi:s32 < 4294967296"},   // vs long: signed
		{"k < 1u", "rsi:s64 < 1"},                    // long vs unsigned int: long
		{"k < 1ul", "rsi:s64 < 0x1"},                 // long vs unsigned long: unsigned
		{"small == -2", "[0x"},                       // a static address
		{"gate == 'a'", "== 97"},
		{"total > 3", "s64 > 3"}, // a volatile long global
	} {
		x, err := Compile(tc.src, o2)
		if err != nil {
			t.Errorf("%s: %v", tc.src, err)
			continue
		}
		if !strings.Contains(x.String(), tc.want) {
			t.Errorf("%s: compiled to %s, want %s", tc.src, x, tc.want)
		}
	}
	for _, src := range []string{"i % 2 == 0", "i == k", "work(1) == 2", `$printf("x")`, "i == 1.5", "nosuch == 1", "(char)i == 1"} {
		if x, err := Compile(src, o2); !errors.Is(err, ErrNotCompilable) {
			t.Errorf("%s: compiled to %v (%v), want a refusal", src, x, err)
		}
	}
	o0 := siteAt(t, "-O0", "work", 12)
	x, err := Compile("i == 5 && k > 0", o0)
	if err != nil {
		t.Fatal(err)
	}
	if s := x.String(); !strings.Contains(s, "[rbp-") {
		t.Errorf("-O0 past the prologue: %s, want frame slots off rbp", s)
	}
}

// FuzzCompile: any text compiles or is refused with an error, never a
// panic, and what compiles passes Check.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{"i == 5", "!(i == 1 || k < 2)", "small == -2 && gate", "i == 0xffffffffffffffffffff",
		"((((i))))", "-", "i == -(-(-1))", "'\\0' == i", `$printf("%d\n", i)`} {
		f.Add(s)
	}
	site := siteAt(f, "-O2", "work", 0)
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return
		}
		x, err := Compile(src, site)
		if err == nil {
			if err := x.Check(); err != nil {
				t.Fatalf("%q compiled to %s, which fails Check: %v", src, x, err)
			}
		}
		if p, err := CompilePrintf(src, site); err == nil && len(p.Values()) > 7 {
			t.Fatalf("%q: %d values", src, len(p.Values()))
		}
	})
}
