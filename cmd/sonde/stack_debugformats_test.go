package main

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// TestStackDebugFormatsMatchGdb compares `sonde stack --full` with gdb's
// `thread apply all bt full` on one program whose debug information comes in
// the forms real programs ship it (bench/stack/REAL-PROGRAMS.md, second
// trial): dwz with a supplementary file shared by two binaries (Debian's and
// Fedora's debug packages: types, abstract instances and strings reached
// through DW_FORM_GNU_ref_alt and DW_FORM_GNU_strp_alt), split DWARF, GCC
// LTO (with a static function renamed cb.lto_priv.0 that a pointer
// argument names <cb>, as gdb does from DWARF), and clang (whose indirect
// calls name their target by a register: cb's v@entry).
func TestStackDebugFormatsMatchGdb(t *testing.T) {
	gdbtest.Need(t)
	for _, c := range []struct {
		name string
		cc   string
		args []string
		post func(t *testing.T, dir, bin string)
		srcs []string // default stk_args.c
	}{
		{name: "dwz-multifile", cc: "gcc", args: []string{"-O2"}, post: dwzMultifile},
		{name: "split-dwarf", cc: "gcc", args: []string{"-O2", "-gsplit-dwarf"}},
		{name: "gcc-lto", cc: "gcc", args: []string{"-O2", "-flto", "-fomit-frame-pointer"}},
		{name: "clang", cc: "clang", args: []string{"-O2"}},
		{name: "clang-indirect", cc: "clang", args: []string{"-O2", "-Wno-unknown-attributes"}, srcs: []string{"stk_lto_a.c", "stk_lto_b.c"}},
		{name: "lto-priv", cc: "gcc", args: []string{"-O2", "-flto", "-flto-partition=max"}, srcs: []string{"stk_lto_a.c", "stk_lto_b.c"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.cc); err != nil {
				t.Skipf("%s not installed (scripts/setup installs it)", c.cc)
			}
			if c.post != nil {
				if _, err := exec.LookPath("dwz"); err != nil {
					t.Skip("dwz not installed (scripts/setup installs it)")
				}
			}
			dir := t.TempDir()
			bin := filepath.Join(dir, "prog")
			args := append([]string{"-g", "-pthread"}, c.args...)
			args = append(args, "-o", "prog")
			if c.srcs == nil {
				c.srcs = []string{"stk_args.c"}
			}
			for _, s := range c.srcs {
				// Built the way packages are: from the source
				// directory, with relative names (gdb then prints
				// the name as given, from the unit's DW_AT_name —
				// the .dwo's for split DWARF).
				data, err := os.ReadFile(testprog.Source(s))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, s), data, 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, s)
			}
			build := exec.Command(c.cc, args...)
			build.Dir = dir
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", c.cc, err, out)
			}
			if c.post != nil {
				c.post(t, dir, bin)
			}
			cmd := startStackProgram(t, bin)
			pid := strconv.Itoa(cmd.Process.Pid)
			gdbArgs := append(append([]string{}, noPrinters...), "-p", pid)
			compareTextFiltered(t, []string{"stack", "--full", pid}, gdbArgs, "thread apply all bt full", dropRepeatedOptimizedOut)
		})
	}
}

// dwzMultifile makes bin one of two binaries whose common DWARF dwz moves to
// a supplementary file (dwz -m), named in bin's .gnu_debugaltlink.
func dwzMultifile(t *testing.T, dir, bin string) {
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	twin := filepath.Join(dir, "twin")
	if err := os.WriteFile(twin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("dwz", "-m", filepath.Join(dir, "common.debug"), bin, twin).CombinedOutput(); err != nil {
		t.Fatalf("dwz -m: %v\n%s", err, out)
	}
}

// dropRepeatedOptimizedOut removes from gdb's bt full the second,
// all-<optimized out> listing of a local already listed in the same frame:
// gdb's copy from the abstract instance of an inlined function (README,
// Known differences), which clang's lexical blocks in inlined code show.
// Only frames of the test program count: glibc's nested syscall blocks list
// a name twice in both tools.
func dropRepeatedOptimizedOut(gdb string) string {
	var out []string
	seen := map[string]bool{}
	ours := false
	local := regexp.MustCompile(`^        (\S+) = (.*)$`)
	for _, l := range strings.Split(gdb, "\n") {
		if strings.HasPrefix(l, "#") {
			seen, ours = map[string]bool{}, strings.Contains(l, "stk_args.c:")
		}
		if m := local.FindStringSubmatch(l); m != nil && ours {
			if seen[m[1]] && m[2] == "<optimized out>" {
				continue
			}
			seen[m[1]] = true
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// TestStackFortranMatchesGdb compares `sonde stack` with gdb's bt on a
// gfortran program: a module procedure named from DWARF (m::deep), an
// assumed-shape array argument printed as "..." (its size is only in the
// running program's descriptor), and the whole stack down to _start (gdb
// takes the Fortran main program for main, finds no ELF symbol of its name
// and does not stop at the C main). symbolize -C prints the linkage name,
// as addr2line -C does.
func TestStackFortranMatchesGdb(t *testing.T) {
	for _, tool := range []string{"gdb", "gfortran", "addr2line"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (scripts/setup installs it)", tool)
		}
	}
	dir := t.TempDir()
	data, err := os.ReadFile(testprog.Source("stk_fortran.f90"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stk_fortran.f90"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("gfortran", "-g", "-O2", "-o", "prog", "stk_fortran.f90")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("gfortran: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "prog")
	cmd := startStackProgram(t, bin)
	pid := strconv.Itoa(cmd.Process.Pid)
	// Values print in C syntax in every frame (README, Known
	// differences): the C main's argv string gdb's Fortran printer omits.
	argvString := regexp.MustCompile(`(argv=0x[0-9a-f]+) "[^"]*"`)
	compareTextFiltered(t, []string{"stack", pid}, append(append([]string{}, noPrinters...), "-p", pid), "thread apply all bt",
		func(s string) string { return argvString.ReplaceAllString(s, "$1") })
	out, errOut, code := runCLI(t, "stack", pid)
	if code != 0 || !strings.Contains(out, "in m::deep (n=0, a=...)") || !strings.Contains(out, " in _start ()") {
		t.Errorf("exit %d, %s\n%s", code, errOut, out)
	}
	nm, err := exec.Command("nm", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var addr string
	for _, l := range strings.Split(string(nm), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[2] == "__m_MOD_deep" {
			addr = "0x" + f[0]
		}
	}
	if addr == "" {
		t.Fatalf("no __m_MOD_deep in nm's list:\n%s", nm)
	}
	want, err := exec.Command("addr2line", "-f", "-i", "-C", "-e", bin, addr).Output()
	if err != nil {
		t.Fatal(err)
	}
	got, errOut, code := runCLI(t, "symbolize", "-f", "-i", "-C", "-e", bin, addr)
	if code != 0 || got != string(want) {
		t.Errorf("symbolize %s: exit %d %s\n%s\naddr2line:\n%s", addr, code, errOut, got, want)
	}
}

// TestStackDwzSupplementaryFile moves a dwz -m build away from the
// supplementary file's recorded path. With the file beside the binary (a
// build tree copied whole) sonde finds it there, checked by build-id, and
// prints what gdb prints when given the file through its build-id
// directory; with the file nowhere, sonde drops the binary's DWARF, as gdb
// does (the mix of found and missing DIEs misnames frames), and says why.
func TestStackDwzSupplementaryFile(t *testing.T) {
	for _, tool := range []string{"gdb", "dwz"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (scripts/setup installs it)", tool)
		}
	}
	dir := t.TempDir()
	src := testprog.Source("stk_args.c")
	build := exec.Command("gcc", "-g", "-O2", "-pthread", "-o", "prog", src)
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	bin, twin, common := filepath.Join(dir, "prog"), filepath.Join(dir, "twin"), filepath.Join(dir, "common.debug")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(twin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	// The recorded path names a directory that does not exist.
	if out, err := exec.Command("dwz", "-m", common, "-M", filepath.Join(dir, "gone", "common.debug"), bin, twin).CombinedOutput(); err != nil {
		t.Fatalf("dwz: %v\n%s", err, out)
	}
	f, err := elf.Open(common)
	if err != nil {
		t.Fatal(err)
	}
	id := buildID(f)
	f.Close()
	if len(id) < 2 {
		t.Fatal("dwz wrote no build-id")
	}
	debugDir := filepath.Join(dir, "debug")
	idDir := filepath.Join(debugDir, ".build-id", fmt.Sprintf("%02x", id[0]))
	if err := os.MkdirAll(idDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(common, filepath.Join(idDir, fmt.Sprintf("%x.debug", id[1:]))); err != nil {
		t.Fatal(err)
	}
	cmd := startStackProgram(t, bin)
	pid := strconv.Itoa(cmd.Process.Pid)
	t.Run("beside", func(t *testing.T) {
		gdbArgs := append(append([]string{}, noPrinters...), "-iex", "set debug-file-directory "+debugDir+":/usr/lib/debug", "-p", pid)
		compareTextCmd(t, []string{"stack", pid}, gdbArgs, "thread apply all bt")
	})
	t.Run("missing", func(t *testing.T) {
		if err := os.Remove(common); err != nil {
			t.Fatal(err)
		}
		compareTextCmd(t, []string{"stack", pid}, append(append([]string{}, noPrinters...), "-p", pid), "thread apply all bt")
		_, errOut, _ := runCLI(t, "stack", pid)
		if !strings.Contains(errOut, "no usable debug information for "+bin) || !strings.Contains(errOut, ".gnu_debugaltlink") {
			t.Errorf("no word of the missing supplementary file:\n%s", errOut)
		}
	})
}

// TestStackRustEndsAtMain: gdb's backtrace of a Rust program ends at the
// crate's main (DW_AT_main_subprogram, whose name is an ELF symbol's
// demangled name), not at the C main below the runtime's lang_start frames;
// sonde's must end at the same frame. Names are compared by count and the
// last frame only (Rust frames are named by rustc's demangling in sonde and
// from DWARF in gdb: README, Known differences).
func TestStackRustEndsAtMain(t *testing.T) {
	bin := testprog.BuildRust(t, "stk_rust_main.rs", "stk_rust_main", "-C", "opt-level=1")
	cmd := startStackProgram(t, bin)
	pid := strconv.Itoa(cmd.Process.Pid)
	got := sondeStacks(t, pid)
	want := gdbStacks(t, "-p", pid)
	if len(got.Threads) != 1 || len(want) != 1 {
		t.Fatalf("threads: sonde %d, gdb %d", len(got.Threads), len(want))
	}
	sf, gf := got.Threads[0].Frames, want[got.Threads[0].TID]
	last := func(fs []stackFrame) string {
		if len(fs) == 0 || fs[len(fs)-1].Function == nil {
			return ""
		}
		return *fs[len(fs)-1].Function
	}
	if len(gf) == 0 || len(sf) != len(gf) || last(sf) != "stk_rust_main::main" || gf[len(gf)-1].function != "stk_rust_main::main" {
		t.Errorf("sonde %d frames ending in %q, gdb %d:\n%s\ngdb:\n%s", len(sf), last(sf), len(gf), dumpSonde(got.Threads[0]), dumpGdb(gf))
	}
}
