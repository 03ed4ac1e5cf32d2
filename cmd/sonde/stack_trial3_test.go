package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// TestStackTrial3MatchesGdb: the states in which issue 21's third trial on
// real programs found sonde's text differing from gdb's `thread apply all
// bt`, rebuilt small (testdata/stk_trial3.c), compared line by line:
//   - label: frame 0's pc is a global zero-size label inside a sized
//     function (qemu-user's safe_syscall_end in safe_syscall_base): gdb
//     names the sized function, sonde named the label;
//   - bss: pointers into .bss past the file's last page (anonymous memory
//     after the executable's mappings) printed without <symbol+off>
//     (mariadbd's <COND_manager+40>);
//   - lowmap: an ELF file mapped below the executable (qemu-user's guest):
//     the lowest file was taken for the executable, so every frame of the
//     real one said "from PROG" and the backtrace went on past main.
func TestStackTrial3MatchesGdb(t *testing.T) {
	gdbtest.Need(t)
	withDebug := testprog.Build(t, testprog.Spec{Sources: []string{"stk_trial3.c"}, Flags: []string{"-O2"}})
	noDebug := testprog.Build(t, testprog.Spec{Sources: []string{"stk_trial3.c"}, Flags: []string{"-O2", "-g0"}, Name: "stk_trial3_g0"})
	relDwarf4 := buildRelativeCompDir(t)
	absUnder := buildAbsoluteUnderCompDir(t)
	for _, c := range []struct {
		name string
		bin  string
		args []string
		want string // a line sonde must print, so the case is not vacuous
	}{
		{"label", withDebug, []string{"label"}, " in trial_read ()\n"},
		{"bss", withDebug, []string{"bss"}, "<trial_bss+1048576>"},
		{"lowmap", noDebug, []string{"lowmap", "/bin/true"}, " in main ()\n"},
		{"dwarf4-relative-compdir", relDwarf4, []string{"label"}, " at stk_trial3.c:"},
		{"absolute-source-under-compdir", absUnder, []string{"label"}, "/Modules/stk_trial3.c:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := startStackProgram(t, c.bin, c.args...)
			pid := strconv.Itoa(cmd.Process.Pid)
			if c.name == "bss" {
				requireAnonymous(t, cmd.Process.Pid, c.bin, "trial_bss", 1<<20)
			}
			out, errOut, code := runCLI(t, "stack", pid)
			if code != 0 || !strings.Contains(out, c.want) {
				t.Errorf("exit %d, no %q:\n%s%s", code, c.want, out, errOut)
			}
			compareText(t, []string{"stack", pid}, append(append([]string{}, noPrinters...), "-p", pid))
		})
	}
}

// TestStackCoreLowmapMatchesGdb: the lowmap state of TestStackTrial3MatchesGdb
// in a kernel core: the executable comes from the core's AT_ENTRY too (the
// core backend served no auxiliary vector: "from PROG" in every frame and
// frames past main).
func TestStackCoreLowmapMatchesGdb(t *testing.T) {
	gdbtest.Need(t)
	bin := testprog.Build(t, testprog.Spec{Sources: []string{"stk_trial3.c"}, Flags: []string{"-O2", "-g0"}, Name: "stk_trial3_g0"})
	core := kernelCore(t, bin, true, "lowmap", "/bin/true")
	out, errOut, code := runCLI(t, "stack", "--core", core, "--exe", bin)
	if code != 0 || !strings.Contains(out, " in main ()\n") {
		t.Errorf("exit %d, no main frame without 'from':\n%s%s", code, out, errOut)
	}
	compareText(t, []string{"stack", "--core", core, "--exe", bin}, []string{bin, core})
}

// buildRelativeCompDir builds stk_trial3.c in DWARF 4 with a relative
// compilation directory (DW_AT_comp_dir "./sub", as -ffile-prefix-map
// builds and OCaml's ocamlopt write them): gdb prints the file without the
// directory, sonde printed "./sub/stk_trial3.c" (OCaml: ./stdlib/list.ml).
func buildRelativeCompDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(testprog.Source("stk_trial3.c"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/stk_trial3.c", src, 0o644); err != nil {
		t.Fatal(err)
	}
	gcc := exec.Command("gcc", "-g", "-gdwarf-4", "-O2", "-pthread", "-fdebug-prefix-map="+dir+"=./sub", "-o", "prog", "stk_trial3.c")
	gcc.Dir = dir
	if out, err := gcc.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return dir + "/prog"
}

// buildAbsoluteUnderCompDir compiles DIR/Modules/stk_trial3.c by its
// absolute path from DIR, as Python's build compiles its extension modules:
// gdb prints the absolute path, sonde printed Modules/stk_trial3.c.
func buildAbsoluteUnderCompDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(testprog.Source("stk_trial3.c"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir+"/Modules", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/Modules/stk_trial3.c", src, 0o644); err != nil {
		t.Fatal(err)
	}
	gcc := exec.Command("gcc", "-g", "-O2", "-pthread", "-o", "prog", dir+"/Modules/stk_trial3.c")
	gcc.Dir = dir
	if out, err := gcc.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return dir + "/prog"
}

// requireAnonymous fails the test unless symbol sym of bin, plus off, lies
// in an anonymous mapping of process pid (else the bss case tests nothing).
func requireAnonymous(t *testing.T, pid int, bin, sym string, off uint64) {
	t.Helper()
	nm, err := exec.Command("nm", bin).Output()
	if err != nil {
		t.Skipf("nm: %v", err)
	}
	var addr uint64
	for _, l := range strings.Split(string(nm), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[2] == sym {
			addr, _ = strconv.ParseUint(f[0], 16, 64)
		}
	}
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil || addr == 0 {
		t.Fatalf("no %s in %s, or no maps: %v", sym, bin, err)
	}
	var bias uint64
	lines := strings.Split(string(maps), "\n")
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 6 && f[5] == bin && f[2] == "00000000" {
			bias, _ = strconv.ParseUint(strings.Split(f[0], "-")[0], 16, 64)
			break
		}
	}
	a := bias + addr + off
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		r := strings.Split(f[0], "-")
		lo, _ := strconv.ParseUint(r[0], 16, 64)
		hi, _ := strconv.ParseUint(r[1], 16, 64)
		if a >= lo && a < hi {
			if len(f) > 5 {
				t.Fatalf("%s+%d (%#x) is in a file mapping: %s", sym, off, a, l)
			}
			return
		}
	}
	t.Fatalf("%s+%d (%#x) is not mapped", sym, off, a)
}

// TestStackVforkParent: a process whose thread waits in vfork for its child
// cannot be stopped (gdb and eu-stack wait for good; sonde waited 30 s and
// said the process had exited): sonde says so at once and names the child,
// whose stack it then prints as gdb does.
func TestStackVforkParent(t *testing.T) {
	gdbtest.Need(t)
	bin := testprog.Build(t, testprog.Spec{Sources: []string{"stk_trial3.c"}, Flags: []string{"-O2"}})
	cmd := exec.Command(bin, "vfork")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make([]byte, 6)
	if _, err := out.Read(line); err != nil || string(line) != "ready\n" {
		t.Fatalf("no ready: %q %v", line, err)
	}
	parent := cmd.Process.Pid
	var child string
	for i := 0; i < 400 && child == ""; i++ {
		kids, _ := os.ReadFile("/proc/" + strconv.Itoa(parent) + "/task/" + strconv.Itoa(parent) + "/children")
		if f := strings.Fields(string(kids)); len(f) == 1 {
			child = f[0]
		}
	}
	if child == "" {
		t.Fatal("no vfork child")
	}
	// The child holds the pipe's write end too: killing the parent leaves
	// it blocked in read for good.
	testprog.KillAtCleanup(t, mustAtoi(t, child))
	waitAllSleeping(t, mustAtoi(t, child))
	stdout, errOut, code := runCLI(t, "stack", strconv.Itoa(parent))
	if code != 1 || stdout != "" || !strings.Contains(errOut, "is in vfork()") || !strings.Contains(errOut, "sonde stack "+child) {
		t.Errorf("sonde stack on the vfork parent: exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
	if st, _ := os.ReadFile("/proc/" + strconv.Itoa(parent) + "/status"); !strings.Contains(string(st), "TracerPid:\t0\n") {
		t.Errorf("the parent was left traced:\n%s", st)
	}
	compareText(t, []string{"stack", child}, append(append([]string{}, noPrinters...), "-p", child))
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStackDMatchesGdb: a D program built with GDC (testdata/stk_d.d) ends
// its backtrace at _Dmain, as gdb's does (sonde went on through druntime's
// _d_run_main to the C main), and Phobos' inlined functions are named
// without the D module (gdb's shortSort, sonde's d::shortSort).
func TestStackDMatchesGdb(t *testing.T) {
	for _, tool := range []string{"gdb", "gdc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (scripts/setup installs it)", tool)
		}
	}
	dir := t.TempDir()
	src, err := os.ReadFile(testprog.Source("stk_d.d"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/stk_d.d", src, 0o644); err != nil {
		t.Fatal(err)
	}
	gdc := exec.Command("gdc", "-g", "-O1", "-o", "prog", "stk_d.d")
	gdc.Dir = dir
	if out, err := gdc.CombinedOutput(); err != nil {
		t.Fatalf("gdc: %v\n%s", err, out)
	}
	cmd := startStackProgram(t, dir+"/prog")
	pid := strconv.Itoa(cmd.Process.Pid)
	out, errOut, code := runCLI(t, "stack", pid)
	if code != 0 || !strings.Contains(out, " _Dmain () at stk_d.d:") || strings.Contains(out, "_d_run_main") {
		t.Errorf("exit %d: no _Dmain last frame:\n%s%s", code, out, errOut)
	}
	compareText(t, []string{"stack", pid}, append(append([]string{}, noPrinters...), "-p", pid))
}

// TestStackCoreWrongExeWarns: given a core and an --exe that is not the
// executable the process ran (another build: its build-id differs), sonde
// uses the file at the core's recorded path, as before, and now says so
// naming both files (it said nothing; gdb warns that the core may not match
// and prints garbage). The stack is the one the right executable gives.
func TestStackCoreWrongExeWarns(t *testing.T) {
	bin := testprog.Build(t, testprog.Spec{Sources: []string{"stk_trial3.c"}, Flags: []string{"-O2"}})
	other := testprog.Build(t, testprog.Spec{Sources: []string{"stk_trial3.c"}, Flags: []string{"-O2", "-g0"}, Name: "stk_trial3_g0"})
	core := kernelCore(t, bin, true, "label")
	right, errRight, code := runCLI(t, "stack", "--core", core, "--exe", bin)
	if code != 0 || strings.Contains(errRight, "warning") {
		t.Fatalf("right --exe: exit %d\n%s", code, errRight)
	}
	got, errOut, code := runCLI(t, "stack", "--core", core, "--exe", other)
	want := other + " is not the " + bin + " the process mapped: build-id "
	if code != 0 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "using "+bin+" instead") {
		t.Errorf("wrong --exe: exit %d, no %q in:\n%s", code, want, errOut)
	}
	if got != right {
		t.Errorf("wrong --exe:\n%s\nright --exe:\n%s", got, right)
	}
}

// TestStackDashP: `sonde stack -p PID`, as gdb -p and eu-stack -p are
// spelled (a new user's first try said "unknown flag -p"), prints what
// `sonde stack PID` prints; both at once is a usage error.
func TestStackDashP(t *testing.T) {
	bin := testprog.Build(t, testprog.Spec{Sources: []string{"stk_trial3.c"}, Flags: []string{"-O2"}})
	cmd := startStackProgram(t, bin, "label")
	pid := strconv.Itoa(cmd.Process.Pid)
	want, _, code := runCLI(t, "stack", pid)
	if code != 0 {
		t.Fatalf("sonde stack %s: exit %d", pid, code)
	}
	got, errOut, code := runCLI(t, "stack", "-p", pid)
	if code != 0 || got != want {
		t.Errorf("sonde stack -p %s: exit %d %s\n%s\nwant:\n%s", pid, code, errOut, got, want)
	}
	if _, errOut, code := runCLI(t, "stack", "-p", pid, pid); code != 2 || !strings.Contains(errOut, "expected one PID") {
		t.Errorf("sonde stack -p PID PID: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "stack", "-p", pid, "--core", "/nonexistent"); code != 2 {
		t.Errorf("sonde stack -p PID --core: exit %d, %s", code, errOut)
	}
}

// TestStackStringsFollowTheLocale: gdb prints strings in its host charset,
// the locale's: in a UTF-8 locale é and ✓ as themselves, bytes that are no
// character as octal escapes and a sequence the string's end cuts short as
// <incomplete sequence \321> (sqlite3's fgets buffer); in the C locale every
// non-ASCII byte in octal. sonde printed the C locale's spelling in both.
func TestStackStringsFollowTheLocale(t *testing.T) {
	gdbtest.Need(t)
	bin := testprog.Build(t, testprog.Spec{Sources: []string{"stk_trial3.c"}, Flags: []string{"-O2"}})
	for _, c := range []struct{ lang, want string }{
		{"C.UTF-8", `text=0x`},
		{"C", `"h\303\251llo w\303\266rld \342\234\223"`},
	} {
		t.Run(c.lang, func(t *testing.T) {
			t.Setenv("LC_ALL", "")
			t.Setenv("LC_CTYPE", "")
			t.Setenv("LANG", c.lang)
			cmd := startStackProgram(t, bin, "utf8")
			pid := strconv.Itoa(cmd.Process.Pid)
			out, _, _ := runCLI(t, "stack", pid)
			if !strings.Contains(out, c.want) {
				t.Errorf("no %q:\n%s", c.want, out)
			}
			if c.lang == "C.UTF-8" && !strings.Contains(out, "\"h\u00e9llo w\u00f6rld \u2713\"") {
				t.Errorf("no UTF-8 text:\n%s", out)
			}
			compareText(t, []string{"stack", pid}, append(append([]string{}, noPrinters...), "-p", pid))
		})
	}
}
