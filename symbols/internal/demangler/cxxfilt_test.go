package demangler

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// cxxSymbols returns the C++ names (_Z...) of a file's dynamic symbol
// table, version suffixes dropped, each once.
func cxxSymbols(t *testing.T, path string) []string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Skipf("%s: %v", path, err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var names []string
	for _, s := range syms {
		n := s.Name
		if i := strings.IndexByte(n, '@'); i >= 0 {
			n = n[:i]
		}
		if strings.HasPrefix(n, "_Z") && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names
}

// cxxfiltAll demangles names with binutils c++filt (one per line; a name
// it cannot demangle comes back unchanged).
func cxxfiltAll(t *testing.T, names []string, args ...string) []string {
	t.Helper()
	cxxfilt, err := exec.LookPath("c++filt")
	if err != nil {
		t.Skip("c++filt (binutils) not installed")
	}
	cmd := exec.Command(cxxfilt, args...)
	cmd.Stdin = strings.NewReader(strings.Join(names, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(want) != len(names) {
		t.Fatalf("c++filt gave %d lines for %d names", len(want), len(names))
	}
	return want
}

// packsSource declares templates whose argument lists end in empty packs
// (LLVM's PassManager<IRUnit, AnalysisManager<IRUnit>> shape), nested
// templates without packs (std::vector<std::vector<int> >) and a pack
// between arguments; compiled, its symbols are the names to demangle.
const packsSource = `
#include <vector>
#include <map>
#include <string>
namespace llvm {
struct Module {}; struct Function {};
template <class IR, class... Extra> struct AnalysisManager { int n; };
template <class IR, class AM = AnalysisManager<IR>, class... Extra> struct PassManager {
  int run(IR &, AM &);
};
template <class IR, class AM, class... Extra> int PassManager<IR, AM, Extra...>::run(IR &, AM &) { return 1; }
template struct PassManager<Module>;
template struct PassManager<Function>;
template <class... A> struct Tuple {};
template <class T, class... A> int mid(Tuple<A...>, T) { return 0; }
template int mid<std::vector<std::vector<int> > >(Tuple<>, std::vector<std::vector<int> >);
template int mid<Tuple<Tuple<> > >(Tuple<>, Tuple<Tuple<> >);
template int mid<std::map<std::string, AnalysisManager<Module> > >(Tuple<AnalysisManager<Function> >, std::map<std::string, AnalysisManager<Module> >);
}
`

// TestNamesMatchGNU: every C++ name of a compiled file (empty argument
// packs closing nested templates, nested templates without them) and of
// libstdc++'s dynamic symbols demangles as binutils c++filt -i demangles it
// (perf, addr2line and gdb share its demangler), with parameters and
// without (-p, as perf names frames). clang's stacks are full of
// PassManager<llvm::Module, llvm::AnalysisManager<llvm::Module>>::run,
// which sonde spelled "...<llvm::Module> >::run" where perf does not.
func TestNamesMatchGNU(t *testing.T) {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "packs.cc")
	obj := filepath.Join(dir, "packs.o")
	if err := os.WriteFile(src, []byte(packsSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gxx, "-std=c++17", "-c", src, "-o", obj).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	f, err := elf.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range syms {
		if strings.HasPrefix(s.Name, "_Z") {
			names = append(names, s.Name)
		}
	}
	if lib := "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"; fileExists(lib) {
		names = append(names, cxxSymbols(t, lib)...)
	}
	full := cxxfiltAll(t, names, "-i")
	bare := cxxfiltAll(t, names, "-i", "-p")
	nested := 0
	for i, n := range names {
		if strings.Contains(full[i], ">>") {
			nested++
		}
		if got, ok := Full(n); !ok || got != full[i] {
			t.Errorf("Full(%s) = %q, c++filt -i %q", n, got, full[i])
		}
		if got, ok := WithoutParams(n); !ok || got != bare[i] {
			t.Errorf("WithoutParams(%s) = %q, c++filt -i -p %q", n, got, bare[i])
		}
		if _, d, ok := Both(n); !ok || strings.Contains(d, packMarker) {
			t.Errorf("Both(%s) display %q", n, d)
		}
	}
	if nested < 2 {
		t.Errorf("only %d names where c++filt closes templates with \">>\": the test lost its subject", nested)
	}
	t.Logf("%d names, %d closing \">>\"", len(names), nested)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestRustV0MatchesCxxfilt: every v0 name of a Rust program built with
// -C symbol-mangling-version=v0 (rustc's own libraries use v0) demangles
// as binutils c++filt -i demangles it, constructors used as functions
// included: the library printed "Map<..., Wrapper::>" for
// rustc-demangle's and binutils' "Map<..., Wrapper>" (librustc_driver: 238
// names of 60,000).
func TestRustV0MatchesCxxfilt(t *testing.T) {
	bin := testprog.BuildRust(t, "rust_v0ctor.rs", "rust_v0ctor", "-C", "symbol-mangling-version=v0")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := f.Symbols()
	f.Close()
	seen := map[string]bool{}
	var names []string
	for _, s := range syms {
		if strings.HasPrefix(s.Name, "_R") && !seen[s.Name] {
			seen[s.Name] = true
			names = append(names, s.Name)
		}
	}
	want := cxxfiltAll(t, names, "-i")
	ctors, other := 0, 0
	for i, n := range names {
		got, ok := Full(n)
		if strings.Contains(n, "Nc") && (strings.Contains(want[i], "Wrapper>") || strings.Contains(want[i], "Wrapper as ")) {
			ctors++
			if !ok || got != want[i] {
				t.Errorf("Full(%s) = %q, c++filt -i %q", n, got, want[i])
			}
		} else if ok && got != want[i] {
			// The library's own differences, left (the seventh trial's
			// notes): closure disambiguators of nested closures, and
			// names it refuses (lowercase namespaces other than c).
			other++
		}
		if strings.Contains(got, "::>") || strings.Contains(got, ":: as ") {
			t.Errorf("Full(%s) = %q: an empty name's separator", n, got)
		}
	}
	if ctors < 2 {
		t.Errorf("%d names with Wrapper's constructor among %d v0 names: the test lost its subject", ctors, len(names))
	}
	t.Logf("%d v0 names, %d with a constructor as a function; %d others differ from c++filt", len(names), ctors, other)
}
