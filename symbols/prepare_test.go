package symbols

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestPrepare: Prepare reads the unit index; for an executable also the
// symbol table and the function index of its large units; and lookups
// answer the same after it.
func TestPrepare(t *testing.T) {
	path := testprog.Build(t, testprog.Spec{Sources: []string{"dw_inline.c", "dw_second.c"}, Flags: []string{"-O2"}, Name: "dw_two_units"})
	addrs := codeAddresses(t, path)
	var want []string
	withFuncScopes(math.MaxUint64, 0, func() { want, _ = lookupEach(t, path, addrs) })
	withFuncScopes(0, math.MaxInt, func() {
		lib := open(t, path)
		lib.Prepare(false)
		if !lib.dw.indexed.Load() || lib.symsReady.Load() {
			t.Fatalf("Prepare(false): indexed %v, symbols read %v; want the index only", lib.dw.indexed.Load(), lib.symsReady.Load())
		}
		exe := open(t, path)
		exe.Prepare(true)
		if !exe.dw.indexed.Load() || !exe.symsReady.Load() {
			t.Fatalf("Prepare(true): indexed %v, symbols read %v", exe.dw.indexed.Load(), exe.symsReady.Load())
		}
		for _, cu := range exe.dw.units {
			if cu.funcs.Load() == nil {
				t.Errorf("unit %s has no function index after Prepare(true)", cu.name)
			}
		}
		if got := answers(exe, addrs); !slices.Equal(got, want) {
			t.Errorf("lookups after Prepare differ from those without")
		}
	})
}

// TestPrepareFunction: PrepareFunction decodes what a lookup in the named
// function needs, so that the lookup answers from decoded data alone
// (appendDecoded), and answers as a binary that did not prepare it; a name
// the binary does not define prepares nothing. On libc (with its debug
// file), the start-up function every stack runs through.
func TestPrepareFunction(t *testing.T) {
	check := func(t *testing.T, path, name string) {
		b := open(t, path)
		b.Prepare(false)
		if b.PrepareFunction("sonde_no_such_function") {
			t.Errorf("PrepareFunction of an undefined name reported a function")
		}
		addr, _, ok := b.FunctionAddress(name)
		if !ok {
			t.Fatalf("%s: no function %s", path, name)
		}
		if _, _, ok := b.appendDecoded(nil, addr); ok && b.dw != nil {
			t.Fatalf("%s at %#x is decoded before PrepareFunction", name, addr)
		}
		if !b.PrepareFunction(name) {
			t.Fatalf("PrepareFunction(%q) found no function", name)
		}
		got, err, ok := b.appendDecoded(nil, addr)
		if !ok {
			t.Fatalf("%s at %#x still needs decoding after PrepareFunction", name, addr)
		}
		want, werr := open(t, path).Lookup(addr)
		if fmt.Sprint(got, err) != fmt.Sprint(want, werr) {
			t.Errorf("at %#x: prepared %+v %v, fresh lookup %+v %v", addr, got, err, want, werr)
		}
	}
	t.Run("exe", func(t *testing.T) {
		path := testprog.Build(t, testprog.Spec{Sources: []string{"dw_inline.c", "dw_second.c"}, Flags: []string{"-O2"}, Name: "dw_two_units"})
		check(t, path, "main")
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
		check(t, libc, "__libc_start_call_main")
	})
}
