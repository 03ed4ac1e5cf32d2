package symbols

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// variants are the builds every address-level test runs on.
var variants = []struct {
	src   string
	flags []string
}{
	{"dw_inline.c", []string{"-O0", "-gdwarf-5"}},
	{"dw_inline.c", []string{"-O2", "-gdwarf-5"}},
	{"dw_inline.c", []string{"-O2", "-gdwarf-4"}},
	{"dw_cxx.cc", []string{"-O0", "-gdwarf-5"}},
	{"dw_cxx.cc", []string{"-O2", "-gdwarf-5"}},
	{"dw_cxx.cc", []string{"-O2", "-gdwarf-4"}},
}

// TestFramesAgainstAddr2lineAndGDB looks up every byte of every function and
// compares with gdb and binutils addr2line: the inline chain's function names
// with gdb's (parameter lists aside: gdb prints them, built from DWARF types,
// where there is no linkage name); the chain's length and call sites with
// addr2line's; the innermost line with addr2line's, except where addr2line
// picks another row among several at one address - there gdb must agree
// with us.
func TestFramesAgainstAddr2lineAndGDB(t *testing.T) {
	for _, v := range variants {
		t.Run(v.src+strings.Join(v.flags, ""), func(t *testing.T) {
			path := build(t, v.src, v.flags...)
			b := open(t, path)
			addrs := codeAddresses(t, path)
			want := addr2line(t, path, addrs)
			chains := gdbChains(t, path, addrs)
			var disputed []uint64
			inlined, errs := 0, 0
			fail := func(format string, args ...any) {
				if errs++; errs <= 20 {
					t.Errorf(format, args...)
				}
			}
			for _, a := range addrs {
				got, err := b.Lookup(a)
				if err != nil {
					t.Fatalf("%#x: %v", a, err)
				}
				w, g := want[a], chains[a]
				if len(got) != len(w) || len(got) != len(g) {
					fail("%#x: %d frames %v, addr2line %d %v, gdb %v", a, len(got), got, len(w), w, g)
					continue
				}
				if len(got) > 1 {
					inlined++
				}
				for i := range got {
					// gdb names lambdas and templates without a DWARF linkage name
					// unqualified or with "struct {...}"; we take the mangled name of
					// the ELF symbol there, as addr2line does (minus return type and
					// clone suffix).
					if stripParams(got[i].Function) != stripParams(g[i]) && !strings.HasSuffix(stripClone(w[i].fn), got[i].Function) {
						fail("%#x frame %d: function %q, gdb %q (addr2line %q)", a, i, got[i].Function, g[i], w[i].fn)
					}
					if i > 0 && (got[i].File != w[i].file || got[i].Line != w[i].line) {
						fail("%#x frame %d: call site %s:%d, addr2line %s:%d", a, i, got[i].File, got[i].Line, w[i].file, w[i].line)
					}
				}
				if got[0].File != w[0].file || got[0].Line != w[0].line {
					disputed = append(disputed, a)
				}
			}
			if strings.Contains(strings.Join(v.flags, ""), "O2") && inlined == 0 {
				t.Errorf("no address with inline frames: the test program lost its inlining")
			}
			if len(disputed) > 0 {
				// Where addr2line and we differ on the innermost line, gdb decides.
				gl := gdbLines(t, path, disputed)
				for _, a := range disputed {
					got, _ := b.Lookup(a)
					if l := gl[a]; l.line != got[0].Line || !sameFile(got[0].File, l.file) {
						fail("%#x: line %s:%d, addr2line %s:%d, gdb %s:%d", a, got[0].File, got[0].Line,
							want[a][0].file, want[a][0].line, l.file, l.line)
					}
				}
			}
			t.Logf("%d addresses, %d with inline frames, %d where addr2line's row choice differs from gdb's",
				len(addrs), inlined, len(disputed))
		})
	}
}

// TestColdAndClonesUseSourceNames: .cold parts and IPA clones are named by
// their DWARF source name, while the ELF symbol carries the suffix.
func TestColdAndClonesUseSourceNames(t *testing.T) {
	path := build(t, "dw_inline.c", "-O2")
	b := open(t, path)
	syms := elfSymbols(t, path)
	for sym, want := range map[string]string{
		"checked_div.cold":           "checked_div",
		"main.cold":                  "main",
		"scale.constprop.0":          "scale",
		"first_field.isra.0":         "first_field",
		"report_failure.constprop.0": "report_failure",
	} {
		addr, ok := syms[sym]
		if !ok {
			t.Errorf("gcc made no %s: the test program needs updating", sym)
			continue
		}
		frames, err := b.Lookup(addr)
		if err != nil || len(frames) == 0 {
			t.Errorf("%s at %#x: %v %v", sym, addr, frames, err)
			continue
		}
		outer := frames[len(frames)-1]
		if outer.Function != want || outer.FromSymbolTable {
			t.Errorf("%s at %#x: function %q (symbol table %v), want %q", sym, addr, outer.Function, outer.FromSymbolTable, want)
		}
	}
}

// TestPastEndSequenceHasNoLine: _start follows main's code; the address
// after main's last line row must not inherit main's line.
func TestPastEndSequenceHasNoLine(t *testing.T) {
	path := build(t, "dw_inline.c", "-O2")
	b := open(t, path)
	start := elfSymbols(t, path)["_start"]
	frames, err := b.Lookup(start)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if f.Line != 0 || f.File != "" {
			t.Errorf("_start %#x has a line: %+v", start, f)
		}
	}
	if len(frames) != 1 || frames[0].Function != "_start" || !frames[0].FromSymbolTable {
		t.Errorf("_start: %+v, want the symbol-table name only", frames)
	}
}

// TestCallerLookupUsesPCMinusOne: the return address of a call that ends a
// function belongs to the next instruction; LookupCaller reports the call.
func TestCallerLookupUsesPCMinusOne(t *testing.T) {
	path := build(t, "dw_inline.c", "-O0")
	b := open(t, path)
	line := markerLine(t, "dw_inline.c", "main_scale")
	locs, err := b.LookupLine("dw_inline.c", line)
	if err != nil || len(locs) != 1 {
		t.Fatalf("LookupLine main_scale: %v %v", locs, err)
	}
	seq, err := b.LineSequence(locs[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	// The first address of the next line is the return address of the call
	// to scale (at -O0 the call is the line's last instruction).
	var ret uint64
	for _, r := range seq {
		if r.Addr > locs[0].Addr && r.Line != line {
			ret = r.Addr
			break
		}
	}
	plain, _ := b.Lookup(ret)
	caller, _ := b.LookupCaller(ret)
	if len(caller) == 0 || caller[0].Line != line {
		t.Fatalf("LookupCaller(%#x) = %+v, want line %d", ret, caller, line)
	}
	if len(plain) > 0 && plain[0].Line == line {
		t.Fatalf("Lookup(%#x) = %+v: expected the next line, test program changed?", ret, plain)
	}
}

func elfSymbols(t testing.TB, path string) map[string]uint64 {
	t.Helper()
	syms := map[string]uint64{}
	f, err := openELFFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	ss, _ := f.f.Symbols()
	for _, s := range ss {
		syms[s.Name] = s.Value
	}
	return syms
}

func (f Frame) String() string {
	return fmt.Sprintf("%s@%s:%d", f.Function, f.File, f.Line)
}

var cloneRE = regexp.MustCompile(`( \[clone [^]]*\])+$`)

func stripClone(s string) string { return cloneRE.ReplaceAllString(s, "") }

// TestLargeLibraryAgainstGDB compares the innermost line of 300 random
// addresses of a large optimized library (see benchLibrary) with gdb's
// "info line". Skipped in -short mode and when the library is absent.
func TestLargeLibraryAgainstGDB(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: gdb loads a large library")
	}
	p := os.Getenv("SONDE_BENCH_LIB")
	if p == "" {
		p = "/usr/lib/x86_64-linux-gnu/libpython3.11d.so.1.0"
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not present (apt-get install libpython3.11-dbg)", p)
	}
	addrs := randomCodeAddresses(t, p, 300)
	b := open(t, p)
	want := gdbLines(t, p, addrs)
	bad := 0
	for _, a := range addrs {
		frames, err := b.Lookup(a)
		if err != nil {
			t.Fatalf("%#x: %v", a, err)
		}
		w := want[a]
		var got Frame
		if len(frames) > 0 {
			got = frames[0]
		}
		if got.Line != w.line || (w.line != 0 && !sameFile(got.File, w.file)) {
			if bad++; bad < 10 {
				t.Errorf("%#x: %s:%d, gdb %s:%d", a, got.File, got.Line, w.file, w.line)
			}
		}
	}
}
