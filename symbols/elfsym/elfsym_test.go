package elfsym

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// pltVariants are the linker layouts of PLT stubs on x86-64.
var pltVariants = []struct {
	name  string
	flags []string
}{
	{"lazy", []string{"-O1"}},                                         // .plt + .plt.got
	{"now", []string{"-O1", "-Wl,-z,now"}},                            // .plt without lazy binding
	{"ibt", []string{"-O1", "-fcf-protection=full", "-Wl,-z,ibtplt"}}, // .plt + .plt.sec + 16-byte .plt.got
	{"ibtnow", []string{"-O1", "-fcf-protection=full", "-Wl,-z,ibtplt", "-Wl,-z,now"}},
	{"nopie", []string{"-O1", "-no-pie"}},
	{"static", []string{"-O1", "-static"}}, // .rela.plt of IRELATIVE only
}

func buildPLT(t testing.TB, variant string, flags []string) string {
	return testprog.Build(t, testprog.Spec{Sources: []string{"sym_plt.c"}, Flags: flags, Name: "sym_plt_" + variant})
}

func needTool(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s not installed: comparison against it skipped", name)
	}
}

func openTable(t testing.TB, path string) *Table {
	t.Helper()
	tab, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return tab
}

var objdumpPLT = regexp.MustCompile(`^([0-9a-f]+) <(.+@plt)>:$`)

// TestPLTNamesMatchObjdump: every stub objdump names (binutils' synthetic
// symbols, the same gdb uses) gets the same name at the same address, and
// we name no stub objdump leaves unnamed.
func TestPLTNamesMatchObjdump(t *testing.T) {
	needTool(t, "objdump")
	type target struct{ name, path string }
	var targets []target
	for _, v := range pltVariants {
		targets = append(targets, target{v.name, buildPLT(t, v.name, v.flags)})
	}
	// libc's own PLT: IRELATIVE slots named "*ABS*+0x<resolver>@plt".
	if _, err := os.Stat("/lib/x86_64-linux-gnu/libc.so.6"); err == nil {
		targets = append(targets, target{"libc", "/lib/x86_64-linux-gnu/libc.so.6"})
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			bin := tg.path
			out, err := exec.Command("objdump", "-d", "-j", ".plt", "-j", ".plt.sec", "-j", ".plt.got", bin).Output()
			if err != nil {
				t.Fatalf("objdump: %v", err)
			}
			want := map[uint64]string{}
			for _, line := range strings.Split(string(out), "\n") {
				if m := objdumpPLT.FindStringSubmatch(line); m != nil {
					a, _ := strconv.ParseUint(m[1], 16, 64)
					want[a] = m[2]
				}
			}
			if tg.name == "static" {
				if len(want) != 0 {
					t.Fatalf("objdump names %d stubs in a static binary", len(want))
				}
			} else if len(want) < 5 {
				t.Fatalf("objdump named only %d PLT stubs; test program changed?", len(want))
			}
			got := map[uint64]string{}
			for _, s := range openTable(t, bin).Symbols() {
				if s.Origin == OriginPLT {
					got[s.Addr] = s.Name
				}
			}
			for a, n := range want {
				if got[a] != n {
					t.Errorf("%#x: objdump says %s, we say %q", a, n, got[a])
				}
			}
			for a, n := range got {
				if _, ok := want[a]; !ok {
					t.Errorf("%#x: we say %s, objdump names nothing", a, n)
				}
			}
		})
	}
}

// TestPLTNamesMatchGDB asks gdb's `info symbol` about an address inside
// each stub and about PLT0 (which gdb, like us, leaves unnamed).
func TestPLTNamesMatchGDB(t *testing.T) {
	needTool(t, "gdb")
	for _, v := range []string{"lazy", "ibt"} {
		t.Run(v, func(t *testing.T) {
			var flags []string
			for _, pv := range pltVariants {
				if pv.name == v {
					flags = pv.flags
				}
			}
			bin := buildPLT(t, v, flags)
			tab := openTable(t, bin)
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			plt0 := f.Section(".plt").Addr
			f.Close()
			type q struct {
				addr uint64
				want string
			}
			var qs []q
			for _, s := range tab.Symbols() {
				if s.Origin == OriginPLT {
					qs = append(qs, q{s.Addr + 4, s.Name + " + 4 in section"})
				}
			}
			qs = append(qs, q{plt0 + 2, "No symbol matches"})
			addrs := make([]uint64, len(qs))
			for i, x := range qs {
				addrs[i] = x.addr
			}
			lines := gdbtest.InfoSymbols(t, bin, addrs)
			for i, x := range qs {
				if !strings.HasPrefix(lines[i], x.want) {
					t.Errorf("%#x: gdb says %q, want prefix %q", x.addr, lines[i], x.want)
				}
				s, _, ok := tab.Lookup(x.addr)
				if x.want == "No symbol matches" && ok {
					t.Errorf("%#x (PLT0): we say %s, gdb names nothing", x.addr, s.Name)
				}
			}
		})
	}
}

// nmSym is one line of `nm -S --defined-only`.
type nmSym struct {
	addr, size uint64
	sized      bool
	typ        byte
	name       string
}

func runNM(t testing.TB, path string, dynamic bool) []nmSym {
	t.Helper()
	args := []string{"-S", "--defined-only"}
	if dynamic {
		args = append(args, "-D")
	}
	out, err := exec.Command("nm", append(args, path)...).Output()
	if err != nil {
		t.Fatalf("nm %s: %v", path, err)
	}
	var syms []nmSym
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		var s nmSym
		switch len(f) {
		case 3:
			s.addr, _ = strconv.ParseUint(f[0], 16, 64)
			s.typ, s.name = f[1][0], f[2]
		case 4:
			s.addr, _ = strconv.ParseUint(f[0], 16, 64)
			s.size, _ = strconv.ParseUint(f[1], 16, 64)
			s.sized, s.typ, s.name = true, f[2][0], f[3]
		default:
			continue
		}
		syms = append(syms, s)
	}
	return syms
}

// checkAgainstNM compares lookups with nm's view of the same file: every
// sized code or data symbol is found at its first and last byte (under its
// own name or an alias at the same address and size), and the first byte
// after a symbol that no other symbol covers has no name at all.
func checkAgainstNM(t *testing.T, path string, tab *Table, syms []nmSym, files ...string) {
	t.Helper()
	type tlsKey struct {
		name string
		off  uint64
	}
	tls := map[tlsKey]bool{}
	for _, p := range files {
		f, err := elf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		all, _ := f.Symbols()
		dyn, _ := f.DynamicSymbols()
		for _, s := range append(all, dyn...) {
			if elf.ST_TYPE(s.Info) == elf.STT_TLS {
				b, _ := StripVersion(s.Name)
				tls[tlsKey{b, s.Value}] = true
			}
		}
		f.Close()
	}
	type iv struct{ lo, hi uint64 }
	var covered []iv
	exact := map[uint64]bool{}
	checked := 0
	for _, s := range syms {
		switch s.typ {
		case 'T', 't', 'W', 'w', 'i', 'D', 'd', 'B', 'b', 'R', 'r', 'V', 'v':
		default:
			continue // absolute, undefined, debugging
		}
		if b, _ := StripVersion(s.name); tls[tlsKey{b, s.addr}] {
			continue // a TLS offset, not an address: deliberately not indexed
		}
		if !s.sized || s.size == 0 {
			exact[s.addr] = true
			continue
		}
		covered = append(covered, iv{s.addr, s.addr + s.size})
		base, _ := StripVersion(s.name)
		for _, a := range []uint64{s.addr, s.addr + s.size - 1} {
			got, off, ok := tab.Lookup(a)
			if !ok {
				t.Errorf("%s: %#x: nm has %s (size %d), Lookup found nothing", path, a, s.name, s.size)
				continue
			}
			if got.Addr == s.addr && got.Size == s.size {
				if off != a-s.addr {
					t.Errorf("%s: %#x: offset %d, want %d", path, a, off, a-s.addr)
				}
				found := false
				for _, al := range tab.Aliases(s.addr) {
					found = found || al.Name == base
				}
				if !found {
					t.Errorf("%s: %#x: %s is not among the aliases at %#x", path, a, base, s.addr)
				}
			} else if !got.Contains(a) {
				t.Errorf("%s: %#x: Lookup returned %s [%#x,%#x) which does not contain it", path, a, got.Name, got.Addr, got.End())
			}
			checked++
		}
	}
	sort.Slice(covered, func(i, j int) bool { return covered[i].lo < covered[j].lo })
	inside := func(a uint64) bool {
		for _, c := range covered {
			if c.lo > a {
				return false
			}
			if a < c.hi {
				return true
			}
		}
		return false
	}
	gaps := 0
	for _, c := range covered {
		a := c.hi
		if inside(a) || exact[a] {
			continue
		}
		gaps++
		if s, off, ok := tab.Lookup(a); ok {
			t.Errorf("%s: %#x lies in no symbol (nm), Lookup invented %s+%#x", path, a, s.Name, off)
		}
	}
	if checked < 10 || gaps == 0 {
		t.Fatalf("%s: only %d lookups and %d gaps checked; the comparison is vacuous", path, checked, gaps)
	}
	t.Logf("%s: %d lookups, %d gap addresses agree with nm", path, checked, gaps)
}

func TestLookupMatchesNM(t *testing.T) {
	needTool(t, "nm")
	// The static binary carries a libc's worth of symbols: IFUNCs, aliases,
	// hand-written assembly.
	for _, v := range []string{"lazy", "static"} {
		flags := []string{"-O1"}
		if v == "static" {
			flags = append(flags, "-static")
		}
		bin := buildPLT(t, v, flags)
		checkAgainstNM(t, bin, openTable(t, bin), runNM(t, bin, false), bin)
	}
}

// libcDebugFile returns libc and its build-id debug file, if installed.
func libcDebugFile(t testing.TB) (libc, debug string) {
	t.Helper()
	libc = "/lib/x86_64-linux-gnu/libc.so.6"
	f, err := elf.Open(libc)
	if err != nil {
		t.Skipf("no %s: %v", libc, err)
	}
	defer f.Close()
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		t.Skip("libc has no build-id")
	}
	data, _ := s.Data()
	if len(data) < 16+20 {
		t.Skip("libc build-id note too short")
	}
	id := data[16:]
	h := ""
	for _, b := range id {
		h += strconv.FormatUint(uint64(b)|0x100, 16)[1:]
	}
	debug = filepath.Join("/usr/lib/debug/.build-id", h[:2], h[2:]+".debug")
	if _, err := os.Stat(debug); err != nil {
		t.Skipf("libc debug file not installed (libc6-dbg): %v", err)
	}
	return libc, debug
}

// TestLookupMatchesNMLibc repeats the nm comparison on a real library:
// libc's full .symtab from its debug file merged with its .dynsym.
func TestLookupMatchesNMLibc(t *testing.T) {
	needTool(t, "nm")
	libc, debug := libcDebugFile(t)
	lf, err := elf.Open(libc)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	df, err := elf.Open(debug)
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	tab, err := New("libc", lf, df)
	if err != nil {
		t.Fatal(err)
	}
	// The table is the union of both files, so the gaps are those of the union.
	union := append(runNM(t, debug, false), runNM(t, libc, true)...)
	checkAgainstNM(t, "libc+debug", tab, union, libc, debug)

	// Aliases both local: the public spelling wins (gdb prints clone3).
	if s, _, ok := tab.Lookup(tab.ByName("__clone3")[0].Addr + 1); !ok || s.Name != "clone3" {
		t.Errorf("clone3/__clone3: got %q, want clone3", s.Name)
	}
	// Versioned .symtab names lose their suffix and keep the version.
	cg := tab.ByName("clock_gettime")
	if len(cg) == 0 || cg[0].Version == "" {
		t.Errorf("clock_gettime: %+v, want a versioned symbol", cg)
	}
	for _, s := range tab.Symbols() {
		if strings.Contains(strings.TrimSuffix(s.Name, "@plt"), "@") {
			t.Fatalf("version suffix kept in %q", s.Name)
		}
	}
}

func TestAliasesAndLabels(t *testing.T) {
	bin := buildPLT(t, "lazy", []string{"-O1"})
	tab := openTable(t, bin)
	impl := tab.ByName("sym_aliased_impl")
	if len(impl) != 1 {
		t.Fatalf("ByName(sym_aliased_impl) = %v", impl)
	}
	// Three names, one function: GLOBAL sym_aliased_impl beats WEAK
	// sym_weak_alias (same underscores) and GLOBAL __sym_underscored.
	s, off, ok := tab.Lookup(impl[0].Addr + 2)
	if !ok || s.Name != "sym_aliased_impl" || off != 2 {
		t.Errorf("Lookup in aliased function = %s+%d %v, want sym_aliased_impl+2", s.Name, off, ok)
	}
	var names []string
	for _, a := range tab.Aliases(impl[0].Addr) {
		names = append(names, a.Name)
	}
	if strings.Join(names, ",") != "sym_aliased_impl,sym_weak_alias,__sym_underscored" {
		t.Errorf("Aliases = %v", names)
	}
	// A zero-size label names the addresses up to the next symbol.
	lbl := tab.ByName("sym_asm_label")
	if len(lbl) != 1 || lbl[0].Size != 0 {
		t.Fatalf("sym_asm_label: %+v", lbl)
	}
	if s, _, ok := tab.Lookup(lbl[0].Addr); !ok || s.Name != "sym_asm_label" {
		t.Errorf("Lookup(label) = %s %v", s.Name, ok)
	}
	if s, off, ok := tab.Lookup(lbl[0].Addr + 1); !ok || s.Name != "sym_asm_label" || off != 1 {
		t.Errorf("Lookup(label+1) = %s+%d %v, want sym_asm_label+1 (as gdb)", s.Name, off, ok)
	}
	// The local static function and data are found with their sizes.
	for _, n := range []string{"sym_static_func", "sym_static_counter", "sym_global_counter"} {
		if r := tab.ByName(n); len(r) != 1 || r[0].Size == 0 {
			t.Errorf("ByName(%s) = %+v", n, r)
		}
	}
	if r := tab.ByName("puts@plt"); len(r) != 1 || r[0].Origin != OriginPLT {
		t.Errorf("ByName(puts@plt) = %+v", r)
	}
}

// TestConcurrentUse: lookups and the lazily built name indexes from many
// goroutines at once (run with -race).
func TestConcurrentUse(t *testing.T) {
	bin := testprog.Build(t, testprog.Spec{Sources: []string{"sym_cxx.cc"}, Flags: []string{"-O2"}})
	tab := openTable(t, bin)
	syms := tab.Symbols()
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() {
			ok := true
			for i, s := range syms {
				if got, _, found := tab.Lookup(s.Addr); !found || got.Addr != s.Addr {
					ok = false
				}
				if len(tab.ByName(s.Name)) == 0 || (i%2 == 0 && len(tab.ByName(s.Demangled())) == 0) {
					ok = false
				}
			}
			done <- ok
		}()
	}
	for g := 0; g < 4; g++ {
		if !<-done {
			t.Error("a concurrent lookup failed")
		}
	}
}
