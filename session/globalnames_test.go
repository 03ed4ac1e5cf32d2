package session

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/target/ptrace"
	"github.com/sondedbg/sonde/variables"
)

const libcPath = "/lib/x86_64-linux-gnu/libc.so.6"

// globalModules returns a session and the modules of ex_vars linked with
// libc (executable first, as the front ends order them), skipping without
// libc's DWARF (libc6-dbg, installed by scripts/setup).
func globalModules(tb testing.TB) (*Session, []*modules.Module) {
	tb.Helper()
	exe := testprog.Build(tb, testprog.Spec{Sources: []string{"ex_vars.c"}, Flags: []string{"-O0", "-g"}})
	tg, err := ptrace.New()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { tg.Close() })
	sess := New(tg, Options{})
	mods := []*modules.Module{{Name: exe, Path: exe, Main: true}, {Name: libcPath, Path: libcPath}}
	if b, err := sess.Binary(mods[1]); err != nil || !b.HasDWARF() {
		tb.Skipf("no libc with DWARF (libc6-dbg, installed by scripts/setup): %v", err)
	}
	return sess, mods
}

// libcReader returns the shared variables Reader of the session's libc.
func libcReader(t *testing.T, sess *Session, m *modules.Module) *variables.Reader {
	t.Helper()
	b, err := sess.Binary(m)
	if err != nil {
		t.Fatal(err)
	}
	r, err := variables.For(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFindGlobalMissSkipsLibraryDWARF: a name no module defines is answered
// without indexing libc's DWARF (every unit's DIEs); names that exist — the
// executable's globals and statics, libc's errno (TLS), __environ (environ is only its ELF alias), stdout and
// its static main_arena — are found in the module and at the address that
// reading the DWARF unfiltered gives.
func TestFindGlobalMissSkipsLibraryDWARF(t *testing.T) {
	sess, mods := globalModules(t)
	if _, _, _, err := sess.FindGlobal(mods, "no_such_name_xyz"); err == nil {
		t.Fatal("no_such_name_xyz found")
	}
	if r := libcReader(t, sess, mods[1]); r.NamesIndexed() {
		t.Error("a miss indexed libc's DWARF names")
	}
	for _, c := range []struct {
		name string
		mod  int
	}{{"g_int", 0}, {"s_counter", 0}, {"g_color", 0}, {"errno", 1}, {"__environ", 1}, {"stdout", 1}, {"main_arena", 1}} {
		v, r, _, err := sess.FindGlobal(mods, c.name)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		b, _ := sess.Binary(mods[c.mod])
		want, _ := variables.For(b)
		if r != want {
			t.Errorf("%s: found in the wrong module", c.name)
			continue
		}
		all, err := want.Globals(c.name)
		if err != nil || all[0].Loc.Kind == variables.LocNone {
			t.Errorf("%s: unfiltered lookup: %v", c.name, err)
			continue
		}
		if v.Name != all[0].Name || v.Loc.Kind != all[0].Loc.Kind || !bytes.Equal(v.Loc.Expr, all[0].Loc.Expr) {
			t.Errorf("%s: found %+v, want %+v", c.name, v.Loc, all[0].Loc)
		}
	}
}

// BenchmarkFindGlobalMiss: the first lookup, in a fresh session, of a name
// no module defines, with the ELF symbol check (symbols) and without it
// (dwarf: every module's DWARF name index, as before).
func BenchmarkFindGlobalMiss(b *testing.B) {
	_, mods := globalModules(b)
	for _, mode := range []struct {
		name   string
		filter bool
	}{{"symbols", true}, {"dwarf", false}} {
		b.Run(mode.name, func(b *testing.B) {
			filterGlobalsBySymbols = mode.filter
			defer func() { filterGlobalsBySymbols = true }()
			for i := 0; i < b.N; i++ {
				tg, err := ptrace.New()
				if err != nil {
					b.Fatal(err)
				}
				sess := New(tg, Options{})
				if _, _, _, err := sess.FindGlobal(mods, "no_such_name_xyz"); err == nil {
					b.Fatal("found")
				}
				tg.Close()
			}
		})
	}
}

// TestMangledIdentifiers: the identifiers of Itanium and Rust v0 mangled
// names are in the set (a C++ variable in an anonymous namespace is named
// plainly by DWARF and only mangled by its symbol).
func TestMangledIdentifiers(t *testing.T) {
	for _, c := range []struct{ sym, want string }{
		{"_ZN12_GLOBAL__N_11xE", "x"},
		{"_ZN2ns7counterE", "counter"},
		{"_ZN4core3fmt5write17h0123456789abcdefE", "write"},
		{"_RNvCs1234_7mycrate6STATIC", "STATIC"},
		{"_RNvCs1234_7mycrate3__10", "_10"},
	} {
		set := map[string]struct{}{}
		addMangledIdentifiers(set, c.sym)
		if _, ok := set[c.want]; !ok {
			t.Errorf("%s: %q not among %v", c.sym, c.want, set)
		}
	}
}

// FuzzMangledIdentifiers: any symbol name is scanned without panicking, and
// only substrings of it are added.
func FuzzMangledIdentifiers(f *testing.F) {
	f.Add("_ZN12_GLOBAL__N_11xE")
	f.Add("_RNvCs1234_7mycrate6STATIC")
	f.Add("_Z99999999999999999999x")
	f.Fuzz(func(t *testing.T, sym string) {
		set := map[string]struct{}{}
		addMangledIdentifiers(set, sym)
		for s := range set {
			if !strings.Contains(sym, s) {
				t.Fatalf("%q is not part of %q", s, sym)
			}
		}
	})
}
