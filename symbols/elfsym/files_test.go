package elfsym

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestDemangleMatchesNM: for every mangled symbol of a C++ program, our
// demangled name equals binutils' (nm -C, the demangler gdb uses).
func TestDemangleMatchesNM(t *testing.T) {
	needTool(t, "nm")
	bin := testprog.Build(t, testprog.Spec{Sources: []string{"sym_cxx.cc"}, Flags: []string{"-O2"}})
	raw, err := exec.Command("nm", "--defined-only", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	dem, err := exec.Command("nm", "--defined-only", "-C", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	rl, dl := strings.Split(string(raw), "\n"), strings.Split(string(dem), "\n")
	if len(rl) != len(dl) {
		t.Fatalf("nm and nm -C disagree on the symbol count")
	}
	want := map[string]string{}
	for i := range rl {
		rf := strings.SplitN(rl[i], " ", 3)
		df := strings.SplitN(dl[i], " ", 3)
		if len(rf) == 3 && len(df) == 3 && strings.HasPrefix(rf[2], "_Z") {
			want[rf[2]] = df[2]
		}
	}
	tab := openTable(t, bin)
	n := 0
	for _, s := range tab.Symbols() {
		w, ok := want[s.Name]
		if !ok {
			continue
		}
		n++
		if got := s.Demangled(); got != w {
			t.Errorf("%s: demangled %q, nm -C says %q", s.Name, got, w)
		}
	}
	if n < 5 {
		t.Fatalf("only %d mangled symbols compared", n)
	}
	// Name lookup by demangled name, with and without parameters.
	for _, q := range []string{"symns::twice(int)", "symns::Box<int, 3>::sum() const", "symns::twice"} {
		if len(tab.ByName(q)) == 0 {
			t.Errorf("ByName(%q) found nothing", q)
		}
	}
	if got := len(tab.ByName("symns::twice")); got != 2 {
		t.Errorf("ByName(symns::twice) = %d symbols, want both overloads", got)
	}
}

func TestDemangleNames(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"main", "main"},
		{"puts@GLIBC_2.2.5", "puts"},
		{"_ZN2ns3fooEv@@VERS_1", "ns::foo()"},
		{"_ZN2ns3fooEv@plt", "ns::foo()@plt"},
		{"_Z3fooi.cold", "foo(int) [clone .cold]"},
		// Rust legacy mangling: the hash is dropped, as rustc's demangler does.
		{"_ZN4core3ptr13drop_in_place17h0123456789abcdefE", "core::ptr::drop_in_place"},
		// Rust v0 mangling.
		{"_RNvCs1234_7mycrate3run", "mycrate::run"},
		{"_Zgarbage", "_Zgarbage"},
	} {
		if got := Demangle(c.in); got != c.want {
			t.Errorf("Demangle(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, base, ver string }{
		{"clock_gettime@@GLIBC_2.17", "clock_gettime", "GLIBC_2.17"},
		{"memcpy@GLIBC_2.2.5", "memcpy", "GLIBC_2.2.5"},
		{"plain", "plain", ""},
		{"@odd", "@odd", ""},
	} {
		if b, v := StripVersion(c.in); b != c.base || v != c.ver {
			t.Errorf("StripVersion(%q) = %q, %q", c.in, b, v)
		}
	}
}

// TestStrippedPlusDebugFile: a stripped binary merged with its
// --only-keep-debug file gives the same table as the unstripped binary,
// and the stripped binary alone never names the static function after a
// neighbouring exported one.
func TestStrippedPlusDebugFile(t *testing.T) {
	needTool(t, "objcopy")
	bin := buildPLT(t, "lazy", []string{"-O1"})
	dir := t.TempDir()
	stripped, debug := filepath.Join(dir, "stripped"), filepath.Join(dir, "debug")
	run(t, "objcopy", "--only-keep-debug", bin, debug)
	run(t, "objcopy", "--strip-all", bin, stripped)

	full := openTable(t, bin)
	sf, df := mustELF(t, stripped), mustELF(t, debug)
	merged, err := New("stripped+debug", sf, df)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := describe(full.Symbols()), describe(merged.Symbols()); a != b {
		t.Errorf("tables differ:\nfull:\n%s\nmerged:\n%s", a, b)
	}
	alone, err := New("stripped", sf)
	if err != nil {
		t.Fatal(err)
	}
	st := full.ByName("sym_static_func")[0]
	if s, off, ok := alone.Lookup(st.Addr + 1); ok {
		t.Errorf("stripped binary: static function named %s+%d; want no name", s.Name, off)
	}
	if len(alone.ByName("puts@plt")) != 1 {
		t.Errorf("stripped binary lost its PLT names")
	}
}

func describe(syms []Symbol) string {
	var b strings.Builder
	for _, s := range syms {
		fmt.Fprintf(&b, "%#x %d %s %s\n", s.Addr, s.Size, s.Name, s.Kind)
	}
	return b.String()
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func mustELF(t testing.TB, path string) *elf.File {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// readVDSO copies this process's vDSO image, the way the symbols package
// reads it from a target's memory.
func readVDSO(t testing.TB) []byte {
	t.Helper()
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer maps.Close()
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasSuffix(line, "[vdso]") {
			continue
		}
		rng := strings.SplitN(strings.Fields(line)[0], "-", 2)
		lo, _ := strconv.ParseUint(rng[0], 16, 64)
		hi, _ := strconv.ParseUint(rng[1], 16, 64)
		mem, err := os.Open("/proc/self/mem")
		if err != nil {
			t.Fatal(err)
		}
		defer mem.Close()
		buf := make([]byte, hi-lo)
		if _, err := mem.ReadAt(buf, int64(lo)); err != nil {
			t.Fatalf("read vDSO: %v", err)
		}
		return buf
	}
	t.Skip("this kernel maps no vDSO")
	return nil
}

func TestVDSO(t *testing.T) {
	img := readVDSO(t)
	tab, err := FromImage("[vdso]", img)
	if err != nil {
		t.Fatal(err)
	}
	impl := tab.ByName("__vdso_clock_gettime")
	if len(impl) != 1 || impl[0].Size == 0 {
		t.Fatalf("__vdso_clock_gettime: %+v", impl)
	}
	// clock_gettime (WEAK) and __vdso_clock_gettime (GLOBAL) alias: the
	// public name wins.
	s, off, ok := tab.Lookup(impl[0].Addr + 3)
	if !ok || s.Name != "clock_gettime" || off != 3 || s.Version == "" {
		t.Errorf("Lookup in clock_gettime = %+v+%d %v", s, off, ok)
	}
	needTool(t, "nm")
	p := filepath.Join(t.TempDir(), "vdso.so")
	if err := os.WriteFile(p, img, 0o644); err != nil {
		t.Fatal(err)
	}
	checkAgainstNM(t, p, tab, runNM(t, p, true), p)
}

// patchSection rewrites one field of a section header in a copy of path.
func patchSection(t testing.TB, path, section string, field int, value uint64) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := mustELF(t, path)
	idx := -1
	for i, s := range f.Sections {
		if s.Name == section {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatalf("%s has no %s", path, section)
	}
	shoff := binary.LittleEndian.Uint64(data[0x28:])
	binary.LittleEndian.PutUint64(data[shoff+uint64(idx)*64+uint64(field):], value)
	out := filepath.Join(t.TempDir(), filepath.Base(path)+"-bad"+strings.ReplaceAll(section, ".", "-"))
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

const (
	shOffset  = 0x18
	shSize    = 0x20
	shEntsize = 0x38
)

// TestCorruptInputs: truncated files and lying section headers give errors
// that name the file and the section, and what can still be read is kept.
func TestCorruptInputs(t *testing.T) {
	bin := buildPLT(t, "lazy", []string{"-O1"})
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 10, 64, len(data) / 2, len(data) - 100} {
		p := filepath.Join(t.TempDir(), fmt.Sprintf("truncated-%d", n))
		os.WriteFile(p, data[:n], 0o644)
		tab, err := Open(p)
		if err == nil {
			t.Errorf("truncated to %d bytes: no error (table of %d symbols)", n, tab.Len())
			continue
		}
		if !strings.Contains(err.Error(), p) {
			t.Errorf("truncated to %d bytes: error %q does not name the file", n, err)
		}
	}

	huge := patchSection(t, bin, ".symtab", shSize, 1<<40)
	tab, err := Open(huge)
	var e *Error
	if err == nil || !errors.As(err, &e) || e.Section != ".symtab" || !strings.Contains(err.Error(), huge) {
		t.Fatalf("lying .symtab size: error %v, want an *Error naming %s and .symtab", err, huge)
	}
	if tab == nil || len(tab.ByName("puts@plt")) != 1 {
		t.Errorf("lying .symtab size: the PLT names should survive")
	}

	past := patchSection(t, bin, ".dynsym", shOffset, uint64(len(data))-8)
	if _, err := Open(past); err == nil || !strings.Contains(err.Error(), ".dynsym") {
		t.Errorf(".dynsym past the end of the file: error %v", err)
	}

	badRel := patchSection(t, bin, ".rela.plt", shEntsize, 7)
	if tab, err := Open(badRel); err == nil || !strings.Contains(err.Error(), "PLT") {
		t.Errorf("bad .rela.plt entry size: error %v", err)
	} else if len(tab.ByName("sym_global_func")) != 1 {
		t.Errorf("bad .rela.plt: the symbol tables should survive")
	}
}
