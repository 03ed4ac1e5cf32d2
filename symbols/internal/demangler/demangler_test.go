package demangler

import (
	"debug/elf"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ianlancetaylor/demangle"
	"github.com/sondedbg/sonde/internal/testprog"
)

// realNames returns the mangled symbol names of real C++ binaries: the
// test programs' and libstdc++'s (plus $SONDE_DEMANGLE_BIN, to check a
// large binary by hand).
func realNames(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, src := range []string{"sym_cxx.cc", "stk_cxx.cc", "stk_cxxsym.cc", "step_cxx.cc"} {
		files = append(files, testprog.Build(t, testprog.Spec{Sources: []string{src}, Flags: []string{"-O2"}}))
	}
	if out, err := exec.Command("g++", "-print-file-name=libstdc++.so").Output(); err == nil {
		if p := strings.TrimSpace(string(out)); strings.HasPrefix(p, "/") {
			files = append(files, p)
		}
	}
	if p := os.Getenv("SONDE_DEMANGLE_BIN"); p != "" {
		files = append(files, p)
	}
	seen := map[string]bool{}
	var names []string
	for _, p := range files {
		f, err := elf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		syms, _ := f.Symbols()
		dyn, _ := f.DynamicSymbols()
		f.Close()
		for _, s := range append(syms, dyn...) {
			n := s.Name
			if i := strings.IndexByte(n, '@'); i > 0 {
				n = n[:i]
			}
			if strings.HasPrefix(n, "_Z") && !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	if len(names) < 1000 {
		t.Fatalf("only %d mangled names found", len(names))
	}
	return names
}

// TestSameAsLibrary: on C++ names from real binaries, Full is the
// library's answer and Display is what demangling twice (with and without
// parameters) and cutting the return type gave, on every name.
func TestSameAsLibrary(t *testing.T) {
	names := realNames(t)
	withReturn := 0
	for _, n := range names {
		want, err := demangle.ToString(n)
		got, ok := Full(n)
		if ok != (err == nil) || got != want {
			t.Errorf("Full(%q) = %q, %v; library %q, %v", n, got, ok, want, err)
			continue
		}
		if err != nil {
			continue
		}
		wantDisplay := want
		if bare, err := demangle.ToString(n, demangle.NoParams); err == nil && bare != "" {
			if i := strings.Index(want, bare); i > 0 && want[i-1] == ' ' {
				wantDisplay = want[i:]
				withReturn++
			}
		}
		if d, ok := Display(n); !ok || d != wantDisplay {
			t.Errorf("Display(%q) = %q, %v; want %q", n, d, ok, wantDisplay)
		}
	}
	t.Logf("%d names, %d with a return type", len(names), withReturn)
	if withReturn == 0 {
		t.Error("no template function among the names: the return-type case is untested")
	}
}

// TestRustLegacy: identifiers keep their leading underscores (the library
// drops one), escapes and ".." decode, and the hash goes.
func TestRustLegacy(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"_ZN3std3sys9backtrace28__rust_begin_short_backtrace17h0123456789abcdefE", "std::sys::backtrace::__rust_begin_short_backtrace"},
		{"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h9a8b7c6d5e4f3a2bE", "std::rt::lang_start::{{closure}}"},
		{"_ZN4core3ptr42drop_in_place$LT$alloc..string..String$GT$17h1234abcd5678ef90E", "core::ptr::drop_in_place<alloc::string::String>"},
		{"_ZN9rust_main4work17hfedcba9876543210E.llvm.42", "rust_main::work"},
		{"_ZN10_$LT$T$GT$3foo17h0123456789abcdefE", "<T>::foo"},
		{"_ZN4_foo3bar17h0123456789abcdefE", "_foo::bar"},
	} {
		got, ok := RustLegacy(c.in)
		if !ok || got != c.want {
			t.Errorf("RustLegacy(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
		if d, ok := Display(c.in); !ok || d != c.want {
			t.Errorf("Display(%q) = %q, %v; want %q", c.in, d, ok, c.want)
		}
	}
	for _, in := range []string{
		"_ZN3foo3barE",                                 // C++
		"_ZN3foo17h0000000000000000E",                  // too few distinct digits: C++
		"_ZN99foo17h0123456789abcdefE",                 // length past the end
		"_ZN3foo17h0123456789abcdeXE",                  // not hex
		"_ZN017h0123456789abcdefE",                     // zero length
		"_ZN17h0123456789abcdefE",                      // no path
		"_ZN99999999999999999999917h0123456789abcdefE", // overflowing length
	} {
		if got, ok := RustLegacy(in); ok {
			t.Errorf("RustLegacy(%q) = %q, want refusal", in, got)
		}
	}
}

// TestRustBinary: every legacy Rust symbol of a real rustc binary decodes,
// and the library's spelling differs from ours only by the underscore it
// drops.
func TestRustBinary(t *testing.T) {
	rustc := testprog.RequireRustc(t)
	out, err := testprog.BuildRustE(rustc, "rust_main.rs", "rust_main_legacy", "-C", "symbol-mangling-version=legacy")
	if err != nil {
		// Stable rustc refuses -C symbol-mangling-version; legacy is its default.
		var err2 error
		if out, err2 = testprog.BuildRustE(rustc, "rust_main.rs", "rust_main"); err2 != nil {
			t.Fatalf("%v\n%v", err, err2)
		}
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	n, underscored, begin := 0, 0, false
	for _, s := range syms {
		if _, ok := rustLegacyBody(s.Name); !ok {
			continue
		}
		got, ok := RustLegacy(s.Name)
		if !ok {
			t.Errorf("RustLegacy(%q) refused", s.Name)
			continue
		}
		n++
		if strings.HasSuffix(got, "::__rust_begin_short_backtrace") {
			begin = true
		}
		lib, err := demangle.ToString(s.Name)
		if err != nil {
			continue
		}
		if got != lib {
			if !dropsOneUnderscore(got, lib) {
				t.Errorf("%q: ours %q, library %q", s.Name, got, lib)
			}
			underscored++
		}
	}
	t.Logf("%d legacy Rust names, %d with a leading underscore the library drops", n, underscored)
	if n < 5 {
		t.Errorf("only %d legacy Rust names in a rustc binary", n)
	}
	if !begin {
		t.Error("no legacy symbol decoded to ...::__rust_begin_short_backtrace")
	}
}

// dropsOneUnderscore reports whether lib is ours with the leading
// underscore of one "__" identifier removed (the library's misreading).
func dropsOneUnderscore(ours, lib string) bool {
	for i := 0; i+1 < len(ours); i++ {
		if ours[i] == '_' && ours[i+1] == '_' && (i == 0 || ours[i-1] == ':') && ours[:i]+ours[i+1:] == lib {
			return true
		}
	}
	return false
}

// TestRustLegacyMatchesCxxfilt: on every legacy symbol of a real rustc
// binary, our name plus the hash element is binutils c++filt's answer
// (gdb's `info symbol` spells them the same way); the library's differs on
// identifiers with leading underscores.
func TestRustLegacyMatchesCxxfilt(t *testing.T) {
	cxxfilt, err := exec.LookPath("c++filt")
	if err != nil {
		t.Skip("c++filt (binutils) not installed")
	}
	bin := rustBinary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	var names []string
	for _, s := range syms {
		if _, ok := rustLegacyBody(s.Name); ok && !strings.Contains(s.Name, "E.") {
			names = append(names, s.Name)
		}
	}
	if len(names) < 5 {
		t.Fatalf("only %d legacy Rust symbols", len(names))
	}
	cmd := exec.Command(cxxfilt)
	cmd.Stdin = strings.NewReader(strings.Join(names, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(want) != len(names) {
		t.Fatalf("c++filt gave %d lines for %d names", len(want), len(names))
	}
	for i, n := range names {
		got, ok := RustLegacy(n)
		hash := n[len(n)-18 : len(n)-1] // "h" and 16 hex digits
		if !ok || got+"::"+hash != want[i] {
			t.Errorf("%s: ours %q (+ ::%s), c++filt %q", n, got, hash, want[i])
		}
	}
}

// rustBinary builds testdata/rust_main.rs with rustc (skipping the test
// when rustc is not installed).
func rustBinary(t *testing.T) string {
	t.Helper()
	return testprog.BuildRust(t, "rust_main.rs", "rust_main")
}
