package symbols

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
)

// gdbBreakpoints sets one breakpoint per spec in gdb (without running the
// program) and returns the addresses of each breakpoint's locations.
func gdbBreakpoints(t *testing.T, path string, specs []string) [][]uint64 {
	t.Helper()
	gdbtest.Need(t)
	var args []string
	for _, s := range specs {
		args = append(args, "-ex", "break "+s)
	}
	args = append(args, "-ex", "info breakpoints", path)
	out := gdbtest.Batch(t, args...)
	re := regexp.MustCompile(`^(\d+)(?:\.\d+)?\s.*\s(0x[0-9a-f]+) in `)
	res := make([][]uint64, len(specs))
	for _, l := range strings.Split(string(out), "\n") {
		m := re.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		a, _ := strconv.ParseUint(m[2][2:], 16, 64)
		if n >= 1 && n <= len(specs) {
			res[n-1] = append(res[n-1], a)
		}
	}
	return res
}

// TestLookupLineMatchesGDBBreakpoints: file:line gives the addresses gdb
// puts a breakpoint's locations at - one per inlined copy and clone.
func TestLookupLineMatchesGDBBreakpoints(t *testing.T) {
	for _, opt := range []string{"-O0", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			path := build(t, "dw_inline.c", opt)
			b := open(t, path)
			markers := []string{"square", "add_squares", "scale_loop", "first_field", "checked_div_cold", "main_add", "main_div"}
			var specs []string
			for _, m := range markers {
				specs = append(specs, fmt.Sprintf("dw_inline.c:%d", markerLine(t, "dw_inline.c", m)))
			}
			want := gdbBreakpoints(t, path, specs)
			multi := 0
			for i, m := range markers {
				locs, err := b.LookupLine("testdata/dw_inline.c", markerLine(t, "dw_inline.c", m))
				if err != nil {
					t.Fatal(err)
				}
				var got []uint64
				for _, l := range locs {
					got = append(got, l.Addr)
				}
				w := want[i]
				sort.Slice(w, func(a, b int) bool { return w[a] < w[b] })
				if m == "checked_div_cold" && opt == "-O2" {
					// gdb treats the start of the .cold part as a function
					// start and moves the breakpoint to checked_div's entry,
					// where line 26 has no code. We keep the line's address:
					// it must be in the cold part, the function's second range.
					ins, _ := b.LookupFunction("checked_div")
					if len(got) != 1 || len(ins) != 1 || len(ins[0].Ranges) != 2 ||
						got[0] < ins[0].Ranges[1].Lo || got[0] >= ins[0].Ranges[1].Hi {
						t.Errorf("%s: %#x, want one address in the cold range of %+v", m, got, ins)
					}
					continue
				}
				if !reflect.DeepEqual(got, w) {
					t.Errorf("%s (%s): %#x, gdb %#x", m, specs[i], got, w)
				}
				if len(got) > 1 {
					multi++
				}
			}
			if opt == "-O2" && multi == 0 {
				t.Error("no line with several locations: inlining lost")
			}
		})
	}
}

// TestLookupFunctionFindsInlinedCopies: every inlined copy of square is
// found, at the addresses gdb uses for "break square" at -O2 (inlined
// copies have no prologue to skip).
func TestLookupFunctionFindsInlinedCopies(t *testing.T) {
	path := build(t, "dw_inline.c", "-O2")
	b := open(t, path)
	insts, err := b.LookupFunction("square")
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, in := range insts {
		if !in.Inlined || in.CallLine == 0 || !strings.HasSuffix(in.CallFile, "dw_inline.c") {
			t.Errorf("instance %+v: want an inlined call with its call site", in)
		}
		got = append(got, in.Entry)
	}
	want := gdbBreakpoints(t, path, []string{"square"})[0]
	sort.Slice(want, func(a, b int) bool { return want[a] < want[b] })
	if !reflect.DeepEqual(got, want) {
		t.Errorf("square: %#x, gdb %#x", got, want)
	}
	// A clone and a function with a cold part: one instance each, named by
	// the source name, with both ranges for checked_div.
	for name, ranges := range map[string]int{"scale": 1, "checked_div": 2} {
		insts, err := b.LookupFunction(name)
		if err != nil || len(insts) != 1 || len(insts[0].Ranges) != ranges || insts[0].Function != name {
			t.Errorf("%s: %+v %v", name, insts, err)
		}
	}
	syms := elfSymbols(t, path)
	for _, name := range []string{"dw_global_counter", "dw_static_table"} {
		vars, err := b.LookupVariable(name)
		if err != nil || len(vars) != 1 || vars[0].Addr != syms[name] || vars[0].FromSymbolTable {
			t.Errorf("%s: %+v %v, symbol at %#x", name, vars, err, syms[name])
		}
	}
}

// TestLineAtAndSequence checks the stepping helpers against the line rows.
func TestLineAtAndSequence(t *testing.T) {
	path := build(t, "dw_inline.c", "-O0")
	b := open(t, path)
	line := markerLine(t, "dw_inline.c", "first_field")
	locs, err := b.LookupLine("dw_inline.c", line)
	if err != nil || len(locs) != 1 {
		t.Fatalf("%v %v", locs, err)
	}
	info, ok, err := b.LineAt(locs[0].Addr)
	if err != nil || !ok || info.Line != line || info.Start != locs[0].Addr || info.End <= info.Start {
		t.Fatalf("LineAt: %+v %v %v", info, ok, err)
	}
	seq, err := b.LineSequence(locs[0].Addr)
	if err != nil || len(seq) < 3 || !seq[len(seq)-1].EndSequence {
		t.Fatalf("LineSequence: %+v %v", seq, err)
	}
	for i := 1; i < len(seq); i++ {
		if seq[i].Addr < seq[i-1].Addr {
			t.Fatalf("sequence not sorted at %d: %+v", i, seq)
		}
	}
	scopes, err := b.Scopes(locs[0].Addr)
	if err != nil || len(scopes) != 1 || scopes[0].Function != "first_field" || len(scopes[0].Ranges) != 1 {
		t.Fatalf("Scopes: %+v %v", scopes, err)
	}
	r := scopes[0].Ranges[0]
	if locs[0].Addr < r.Lo || locs[0].Addr >= r.Hi {
		t.Fatalf("line address %#x outside its function %+v", locs[0].Addr, r)
	}
}

// TestLookupFunctionAsGdbSpellsIt: C++ names as gdb's `break` takes them —
// a tail of the qualified name, and templates without their arguments —
// find the instances gdb finds.
func TestLookupFunctionAsGdbSpellsIt(t *testing.T) {
	path := build(t, "dw_cxx.cc", "-O0")
	b := open(t, path)
	specs := []string{"corpus::apply", "apply", "corpus::detail::Stack::push", "detail::Stack::push",
		"Stack::pop", "corpus::detail::Stack<int>::push", "Counter::twice", "corpus::Counter::bump"}
	want := gdbBreakpoints(t, path, specs)
	for i, spec := range specs {
		insts, err := b.LookupFunction(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if len(insts) != len(want[i]) || len(insts) == 0 {
			t.Errorf("%s: %d instances (%+v), gdb %d", spec, len(insts), insts, len(want[i]))
		}
	}
}

func TestStripTemplateArgs(t *testing.T) {
	for in, want := range map[string]string{
		"twice<int>":                         "twice",
		"ns::Stack<std::vector<int> >::push": "ns::Stack::push",
		"f":                                  "f",
		"main(int, char**)::<lambda(int)>":   "main(int, char**)::<lambda(int)>",
		"ns::operator<< <char>":              "ns::operator<< <char>",
		"broken<int":                         "broken<int",
		"apply<main(int, char**)::<lambda(int)> >": "apply",
	} {
		if got := stripTemplateArgs(in); got != want {
			t.Errorf("stripTemplateArgs(%q) = %q, want %q", in, got, want)
		}
	}
	if got := qualifiedTails("a::B<c::d>::f"); !reflect.DeepEqual(got, []string{"a::B<c::d>::f", "B<c::d>::f", "f"}) {
		t.Errorf("qualifiedTails: %q", got)
	}
}
