package variables_test

import (
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/variables"
	"github.com/sondedbg/sonde/variables/vartest"
)

// BenchmarkFrameLocals reads every local of a frame with 50 of them (ints,
// doubles, longs, structs, pointers) on a core, warm: scopes at the pc, then
// locate and load each variable, as a Variables view refresh does.
func BenchmarkFrameLocals(b *testing.B) {
	exe := testprog.Build(b, testprog.Spec{Sources: []string{"ex_many.c"}, Flags: []string{"-O0"}})
	stop := vartest.GDBStop(b, exe, "stop_here", map[int][]string{1: {"v0"}})
	_, th := stop.Open(b)
	st, err := vartest.Stack(th)
	if err != nil {
		b.Fatal(err)
	}
	f := st.Frame(1)
	r, err := f.Reader()
	if err != nil {
		b.Fatal(err)
	}
	read := func() int {
		scopes, err := r.ScopesAt(variables.LookupPC(f))
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, s := range scopes {
			for _, v := range s.Vars {
				if _, err := r.Read(v, f); err != nil {
					b.Fatalf("%s: %v", v.Name, err)
				}
				n++
			}
		}
		return n
	}
	if n := read(); n < 51 {
		b.Fatalf("%d variables in the frame", n)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		read()
	}
}

// BenchmarkFirstScopes is what the first frame in libc costs a `sonde
// stack` with arguments: a Reader over libc's DWARF (an opened, indexed
// symbols.Binary, as the session holds) and the scopes of one pc in
// nanosleep. Only the unit covering the pc should be decoded.
func BenchmarkFirstScopes(b *testing.B) {
	bin, err := symbols.Open("/lib/x86_64-linux-gnu/libc.so.6", nil)
	if err != nil || !bin.HasDWARF() {
		b.Skipf("no libc with DWARF (libc6-dbg): %v", err)
	}
	defer bin.Close()
	pc, _, ok := bin.FunctionAddress("__nanosleep")
	if !ok {
		b.Skip("no __nanosleep in libc")
	}
	bin.Lookup(pc) // the symbolizer's unit index, built before a backtrace asks for variables
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := variables.New(bin)
		if err != nil {
			b.Fatal(err)
		}
		scopes, err := r.ScopesAt(pc + 4)
		if err != nil || len(scopes) == 0 {
			b.Fatalf("%d scopes, %v", len(scopes), err)
		}
	}
}

// BenchmarkContainers prints every local of pp_cxx's main (24 libstdc++
// containers, smart pointers, iterators: a map of 3 strings, a deque of
// 129, ...) with Pretty as gdb's printers do, on a core, warm: what a
// Variables view of a C++ frame full of containers costs (the summaries
// and the elements gdb's print shows, 200 at most each).
func BenchmarkContainers(b *testing.B) {
	exe := testprog.Build(b, testprog.Spec{Sources: []string{"pp_cxx.cc"}, Flags: []string{"-O0", "-std=c++17"}, Name: "pp_cxx"})
	stop := vartest.GDBStop(b, exe, "stop_here", map[int][]string{1: {"m"}})
	_, th := stop.Open(b)
	st, err := vartest.Stack(th)
	if err != nil {
		b.Fatal(err)
	}
	f := st.Frame(1)
	r, err := f.Reader()
	if err != nil {
		b.Fatal(err)
	}
	scopes, err := r.ScopesAt(variables.LookupPC(f))
	if err != nil {
		b.Fatal(err)
	}
	var vals []variables.Value
	for _, s := range scopes {
		for _, v := range s.Vars {
			val, err := r.Read(v, f)
			if err != nil {
				b.Fatalf("%s: %v", v.Name, err)
			}
			vals = append(vals, val)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, v := range vals {
			r.Format(v, nil, f, variables.FormatOptions{Pretty: true})
		}
	}
}
