package symbols

import (
	"debug/elf"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// withFuncScopes runs fn with units of at least minSize bytes of DIEs
// decoded one function at a time, with no limit on how many.
func withFuncScopes(minSize uint64, maxTrees int, fn func()) {
	oldSize, oldMax, oldFile := funcScopesMinSize, funcScopesMaxTrees, funcScopesFileTrees
	funcScopesMinSize, funcScopesMaxTrees, funcScopesFileTrees = minSize, maxTrees, int32(min(maxTrees, math.MaxInt32))
	defer func() { funcScopesMinSize, funcScopesMaxTrees, funcScopesFileTrees = oldSize, oldMax, oldFile }()
	fn()
}

// sampleFunctionAddresses returns, for every function symbol with a size,
// its first and last byte and every stride-th byte in between.
func sampleFunctionAddresses(t testing.TB, path string, stride uint64) []uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	seen := map[uint64]bool{}
	var out []uint64
	add := func(a uint64) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, s := range append(syms, dyn...) {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || s.Size == 0 {
			continue
		}
		for a := s.Value; a < s.Value+s.Size; a += stride {
			add(a)
		}
		add(s.Value + s.Size - 1)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// lookupEach returns each address's frames and error, printed, from a new
// Binary; and how many units answered one function at a time only.
func lookupEach(t testing.TB, path string, addrs []uint64) (out []string, partial int) {
	t.Helper()
	b, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out = answers(b, addrs)
	if b.dw != nil {
		for _, cu := range b.dw.units {
			if cu.part.Load() != nil && cu.scopes == nil {
				partial++ // answered without the whole unit's tree
			}
		}
	}
	return out, partial
}

// answers returns b's frames at each address, and the call site returning
// there if there is one, printed.
func answers(b *Binary, addrs []uint64) (out []string) {
	var buf []Frame
	var err error
	for _, a := range addrs {
		buf, err = b.AppendFrames(buf[:0], a)
		out = append(out, fmt.Sprintf("%#x: %+v %v", a, buf, err))
		// a as a return address: the call site before it.
		site, ok, err := b.CallSiteAt(a)
		if ok {
			out = append(out, fmt.Sprintf("%#x: call site %+v %v", a, site, err))
		}
	}
	return out
}

// compareFuncScopes checks that per-function decoding answers exactly what
// whole units do, at every address given.
func compareFuncScopes(t *testing.T, path string, addrs []uint64) {
	t.Helper()
	addrs = append(addrs, returnAddresses(t, path, 20000)...)
	var whole, part []string
	var partial int
	withFuncScopes(math.MaxUint64, 0, func() { whole, _ = lookupEach(t, path, addrs) })
	withFuncScopes(0, math.MaxInt, func() { part, partial = lookupEach(t, path, addrs) })
	if partial == 0 {
		t.Fatalf("%s: no unit answered one function at a time", path)
	}
	if len(whole) != len(part) {
		t.Fatalf("%s: %d answers from whole units (frames and call sites), %d one function at a time", path, len(whole), len(part))
	}
	bad, sites := 0, 0
	for i := range whole {
		if strings.Contains(whole[i], "call site") {
			sites++
		}
		if whole[i] != part[i] {
			if bad++; bad <= 5 {
				t.Errorf("%s:\nwhole unit   %s\none function %s", filepath.Base(path), whole[i], part[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d addresses differ", bad, len(addrs))
	}
	t.Logf("%s: %d addresses, %d call sites, %d units decoded one function at a time", filepath.Base(path), len(addrs), sites, partial)
}

// TestFuncScopesMatchWholeUnit: decoding the one function covering an
// address gives the frames (names, inline chains, call sites, lines), the
// call site returning there and the errors that decoding its whole unit does, on C and C++ programs with
// inlining, a Rust program (its std unit is large) and libc's debug file.
func TestFuncScopesMatchWholeUnit(t *testing.T) {
	t.Run("c", func(t *testing.T) {
		path := testprog.Build(t, testprog.Spec{Sources: []string{"dw_inline.c", "dw_second.c"}, Flags: []string{"-O2"}, Name: "dw_two_units"})
		compareFuncScopes(t, path, codeAddresses(t, path))
	})
	t.Run("cxx", func(t *testing.T) {
		path := build(t, "dw_cxx.cc", "-O2")
		compareFuncScopes(t, path, codeAddresses(t, path))
	})
	t.Run("rust", func(t *testing.T) {
		path := rustProgram(t)
		compareFuncScopes(t, path, sampleFunctionAddresses(t, path, 7))
	})
	t.Run("libc", func(t *testing.T) {
		const libc = "/lib/x86_64-linux-gnu/libc.so.6"
		b, err := Open(libc, nil)
		if err != nil {
			t.Skipf("%s: %v", libc, err)
		}
		debugFile := b.DebugFile()
		b.Close()
		if debugFile == "" {
			t.Skip("libc's debug file is not installed (libc6-dbg, in scripts/setup)")
		}
		compareFuncScopes(t, libc, sampleFunctionAddresses(t, libc, 61))
	})
}

// returnAddresses returns up to n return addresses of the call sites DWARF
// describes in path, spread over its units.
func returnAddresses(t testing.TB, path string, n int) []uint64 {
	b, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.dw == nil {
		return nil
	}
	b.dw.index()
	var all []uint64
	for _, cu := range b.dw.units {
		if du, err := cu.dieUnit(); err == nil && du != nil {
			for _, s := range du.readCallSites().sites {
				all = append(all, s.ReturnPC)
			}
		}
	}
	if len(all) <= n {
		return all
	}
	out := make([]uint64, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, all[i*len(all)/n])
	}
	return out
}

// rustProgram builds testdata/dapclient_prog.rs with rustc -g (skipping
// when rustc is not installed): a program whose std unit is large.
func rustProgram(t testing.TB) string {
	t.Helper()
	return testprog.BuildRust(t, "dapclient_prog.rs", "dapclient_prog_rs", "-C", "opt-level=0")
}
