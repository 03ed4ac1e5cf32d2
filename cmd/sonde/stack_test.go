package main

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// gdbStackFrame is one frame of gdb's view, in the JSON's terms.
type gdbStackFrame struct {
	kind     string // normal, inline, signal
	pc       uint64
	function string
	file     string
	line     int
}

// gdbStacks runs gdb on a live pid (args: "-p", PID) or a core (args: EXE,
// CORE) and returns the frames per thread id.
func gdbStacks(t *testing.T, args ...string) map[int][]gdbStackFrame {
	t.Helper()
	res := map[int][]gdbStackFrame{}
	for _, th := range gdbtest.Backtraces(t, nil, args...) {
		res[th.TID] = nil
		for _, f := range th.Frames {
			kind := map[int]string{0: "normal", 2: "inline", 3: "tailcall", 4: "signal"}[f.Type]
			if kind == "" {
				kind = fmt.Sprintf("gdb-type-%d", f.Type)
			}
			res[th.TID] = append(res[th.TID], gdbStackFrame{kind, f.PC, f.Name, f.File, f.Line})
		}
	}
	return res
}

// sondeStacks runs `sonde stack --json` with args.
func sondeStacks(t *testing.T, args ...string) stackReport {
	t.Helper()
	out, errOut, code := runCLI(t, append([]string{"stack", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("sonde stack %v: exit %d\n%s", args, code, errOut)
	}
	var r stackReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("sonde stack --json: %v\n%s", err, out)
	}
	return r
}

// compareWithGdb checks sonde's JSON against gdb frame by frame: kind, pc,
// function, file (as gdb prints it) and line. The signal trampoline's name
// and line are not compared (gdb has none for it in bt).
func compareWithGdb(t *testing.T, got stackReport, want map[int][]gdbStackFrame) {
	t.Helper()
	if len(got.Threads) != len(want) {
		t.Errorf("%d threads, gdb has %d", len(got.Threads), len(want))
	}
	for _, th := range got.Threads {
		gf, ok := want[th.TID]
		if !ok {
			t.Errorf("thread %d: not in gdb's list", th.TID)
			continue
		}
		var diffs []string
		if len(th.Frames) != len(gf) {
			diffs = append(diffs, fmt.Sprintf("%d frames, gdb %d (stop %s %s)", len(th.Frames), len(gf), th.StopReason, th.Error))
		}
		for i := 0; i < min(len(th.Frames), len(gf)); i++ {
			s, g := th.Frames[i], gf[i]
			str := func(p *string) string {
				if p == nil {
					return ""
				}
				return *p
			}
			line := 0
			if s.Line != nil {
				line = *s.Line
			}
			if s.Kind != g.kind || s.PC != fmt.Sprintf("%#x", g.pc) {
				diffs = append(diffs, fmt.Sprintf("#%d: %s %s, gdb %s %#x", i, s.Kind, s.PC, g.kind, g.pc))
				continue
			}
			if g.kind == "signal" {
				continue
			}
			if str(s.Function) != g.function && !knownNameGap(str(s.Function), g.function) || gdbFile(str(s.File)) != g.file || line != g.line {
				diffs = append(diffs, fmt.Sprintf("#%d %s: %q %s:%d, gdb %q %s:%d", i, s.PC, str(s.Function), gdbFile(str(s.File)), line, g.function, g.file, g.line))
			}
		}
		if len(diffs) > 0 {
			t.Errorf("thread %d (%s):\n  %s\nsonde:\n%s\ngdb:\n%s", th.TID, th.Name, strings.Join(diffs, "\n  "), dumpSonde(th), dumpGdb(gf))
		}
	}
}

// knownNameGap accepts the naming differences that remain: gdb's own
// spelling of lambdas in template arguments (main()::<lambda(int)> where
// the demangler says main::{lambda(int)#1}), and the parameter list gdb
// builds from DWARF types for a function without a linkage name and then
// fails to strip ("stage<main()::<lambda(int)> >(struct {...})": its C++
// name parser does not read lambdas).
func knownNameGap(sonde, gdb string) bool {
	if rest, ok := strings.CutPrefix(gdb, sonde+"("); ok && strings.HasSuffix(rest, ")") && strings.Contains(sonde, "<lambda(") {
		return true
	}
	if strings.Contains(sonde, "{lambda(") && strings.Contains(gdb, "<lambda(") {
		i := strings.Index(sonde, "<")
		return i > 0 && strings.HasPrefix(gdb, sonde[:i+1])
	}
	return false
}

func dumpSonde(th threadStack) string {
	var b strings.Builder
	for _, f := range th.Frames {
		b.WriteString("  " + frameLine(f) + "\n")
	}
	return b.String()
}

func dumpGdb(fs []gdbStackFrame) string {
	var b strings.Builder
	for i, f := range fs {
		fmt.Fprintf(&b, "  #%d %s %#x %s %s:%d\n", i, f.kind, f.pc, f.function, f.file, f.line)
	}
	return b.String()
}

// startStackProgram starts a test program and waits for its "ready" line and
// until every thread sleeps in the kernel, so sonde and gdb see one state.
func startStackProgram(t *testing.T, path string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(path, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("%s %v did not get ready: %q %v", path, args, line, err)
	}
	waitAllSleeping(t, cmd.Process.Pid)
	return cmd
}

// waitAllSleeping waits until every thread of pid is in state S.
func waitAllSleeping(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 400; i++ {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		all := len(tasks) > 0
		for _, st := range tasks {
			data, _ := os.ReadFile(st)
			s := string(data)
			if j := strings.LastIndexByte(s, ')'); j < 0 || j+2 >= len(s) || s[j+2] != 'S' {
				all = false
			}
		}
		if all {
			// A thread between its last instruction and the system call's
			// sleep would still be moving; give it a moment.
			time.Sleep(20 * time.Millisecond)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("process %d: threads did not all block", pid)
}

// stackCase is one program state to compare.
type stackCase struct {
	name   string
	source string
	flags  []string
	args   []string
}

var stackCases = []stackCase{
	{"threads-O0", "stk_threads.c", []string{"-O0"}, []string{"threads", "6"}},
	{"threads-O2", "stk_threads.c", []string{"-O2"}, []string{"threads", "6"}},
	{"deep-O2-nofp", "stk_threads.c", []string{"-O2", "-fomit-frame-pointer"}, []string{"deep", "40"}},
	{"signal-O0", "stk_threads.c", []string{"-O0"}, []string{"signal"}},
	{"altstack-O2", "stk_threads.c", []string{"-O2"}, []string{"altstack"}},
	{"qsort-O2", "stk_threads.c", []string{"-O2"}, []string{"qsort"}},
	{"inline-O0", "stk_threads.c", []string{"-O0"}, []string{"inline", "3"}},
	{"inline-O2", "stk_threads.c", []string{"-O2"}, []string{"inline", "3"}},
	{"static-O2", "stk_threads.c", []string{"-O2", "-static"}, []string{"threads", "3"}},
	{"cxx-exception-O0", "stk_cxx.cc", []string{"-O0"}, nil},
	{"cxx-exception-O2", "stk_cxx.cc", []string{"-O2"}, nil},
}

// TestStackLiveMatchesGdb runs `sonde stack --json PID` on each program
// state, then gdb on the same state, and compares every frame.
func TestStackLiveMatchesGdb(t *testing.T) {
	for _, c := range stackCases {
		t.Run(c.name, func(t *testing.T) {
			path := testprog.Build(t, testprog.Spec{Sources: []string{c.source}, Flags: c.flags, Name: "stk-" + c.name})
			cmd := startStackProgram(t, path, c.args...)
			pid := cmd.Process.Pid
			got := sondeStacks(t, strconv.Itoa(pid))
			waitForState(t, pid, 'S') // sonde let it go on
			compareWithGdb(t, got, gdbStacks(t, "-p", strconv.Itoa(pid)))
		})
	}
}

// TestStackCoreMatchesGdb compares `sonde stack --core` with gdb on the same
// core, for cores written by gdb's gcore and by the kernel.
func TestStackCoreMatchesGdb(t *testing.T) {
	for _, c := range stackCases {
		if c.name != "threads-O2" && c.name != "altstack-O2" && c.name != "cxx-exception-O2" && c.name != "static-O2" {
			continue // a representative subset: cores are large
		}
		t.Run(c.name, func(t *testing.T) {
			path := testprog.Build(t, testprog.Spec{Sources: []string{c.source}, Flags: c.flags, Name: "stk-" + c.name})
			cmd := startStackProgram(t, path, c.args...)
			pid := cmd.Process.Pid
			core := filepath.Join(t.TempDir(), "core")
			if out, err := exec.Command("gcore", "-o", core, strconv.Itoa(pid)).CombinedOutput(); err != nil {
				t.Fatalf("gcore: %v\n%s", err, out)
			}
			core += "." + strconv.Itoa(pid)
			got := sondeStacks(t, "--core", core)
			compareWithGdb(t, got, gdbStacks(t, path, core))
		})
	}
}

// kernelCore runs bin with args in a fresh directory with an unlimited core
// size, optionally waits for "ready" and kills it with SIGABRT, and returns
// the core file the kernel wrote (skipping when it writes none here).
func kernelCore(t *testing.T, bin string, waitReady bool, args ...string) string {
	t.Helper()
	pattern, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil || strings.HasPrefix(string(pattern), "|") {
		t.Skipf("core_pattern %q pipes cores to a program: the kernel writes no core file here", strings.TrimSpace(string(pattern)))
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, _ := cmd.StdoutPipe()
	var lim syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_CORE, &lim)
	unlimited := syscall.Rlimit{Cur: ^uint64(0), Max: ^uint64(0)}
	if err := syscall.Setrlimit(syscall.RLIMIT_CORE, &unlimited); err != nil {
		t.Skipf("cannot raise the core size limit: %v", err)
	}
	err = cmd.Start()
	syscall.Setrlimit(syscall.RLIMIT_CORE, &lim)
	if err != nil {
		t.Fatal(err)
	}
	if waitReady {
		bufio.NewReader(out).ReadString('\n')
		waitAllSleeping(t, cmd.Process.Pid)
		cmd.Process.Signal(syscall.SIGABRT)
	} else {
		go io.Copy(io.Discard, out)
	}
	cmd.Wait()
	cores, _ := filepath.Glob(filepath.Join(dir, "core*"))
	if len(cores) == 0 {
		t.Skipf("the kernel wrote no core into %s (core_pattern %q)", dir, strings.TrimSpace(string(pattern)))
	}
	return cores[0]
}

// TestStackKernelCoreMatchesGdb dumps a core with the kernel (SIGABRT with
// an unlimited core size) and compares.
func TestStackKernelCoreMatchesGdb(t *testing.T) {
	path := testprog.Build(t, testprog.Spec{Sources: []string{"stk_threads.c"}, Flags: []string{"-O2"}, Name: "stk-threads-O2"})
	core := kernelCore(t, path, true, "threads", "4")
	got := sondeStacks(t, "--core", core, "--exe", path)
	compareWithGdb(t, got, gdbStacks(t, path, core))
	// A sent signal: no faulting address; gdb's thread order and words.
	if s := got.Signal; s == nil || s.Name != "SIGABRT" || s.Address != nil || s.Code == nil || *s.Code != 0 {
		t.Errorf("signal %+v, want SIGABRT sent (si_code SI_USER), no address", s)
	}
	compareText(t, []string{"stack", "--core", core, "--exe", path}, []string{path, core})
}

// TestStackKernelCoresOfUnwinderCases runs the unwinder's test program
// (testdata/uw_main.c, uw_asm.S, uw_cxx.cc), which stops itself with
// SIGTRAP (or dies of SIGSEGV) in each hard case, lets the kernel dump the
// core, and compares `sonde stack --core` with gdb on it: alloca, DRAP
// realignment, hand-written .cfi_escape CFAs, .debug_frame only, no CFI at
// all, noreturn calls, tail calls, a call through a null pointer, signal
// handlers, exceptions in flight and threads.
func TestStackKernelCoresOfUnwinderCases(t *testing.T) {
	cases := []struct {
		name    string
		sources []string
		flags   []string
		args    []string
	}{
		{"O0", []string{"uw_main.c"}, []string{"-O0"}, []string{"recurse", "3"}},
		{"omitfp", []string{"uw_main.c"}, []string{"-O2", "-fomit-frame-pointer"}, []string{"recurse", "5"}},
		{"static", []string{"uw_main.c"}, []string{"-O2", "-static"}, []string{"recurse", "2"}},
		{"signal", []string{"uw_main.c"}, []string{"-O2"}, []string{"signal"}},
		{"altstack", []string{"uw_main.c"}, []string{"-O2"}, []string{"altstack"}},
		{"alloca", []string{"uw_main.c"}, []string{"-O2"}, []string{"alloca", "5"}},
		{"realign", []string{"uw_main.c"}, []string{"-O2"}, []string{"realign", "3"}},
		{"stackrealign", []string{"uw_main.c"}, []string{"-O2", "-mstackrealign", "-mavx"}, []string{"alloca", "3"}},
		{"asm", []string{"uw_main.c", "uw_asm.S"}, []string{"-O2"}, []string{"asm"}},
		{"debugframe", []string{"uw_main.c"}, []string{"-O2", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"}, []string{"recurse", "3"}},
		{"noreturn", []string{"uw_main.c"}, []string{"-O2"}, []string{"noreturn"}},
		{"nocfi", []string{"uw_main.c"}, []string{"-O1", "-g0", "-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"}, []string{"recurse", "3"}},
		{"tailcall", []string{"uw_main.c"}, []string{"-O2"}, []string{"tailcall"}},
		{"nullcall", []string{"uw_main.c"}, []string{"-O2"}, []string{"nullcall"}},
		{"threads", []string{"uw_main.c"}, []string{"-O2"}, []string{"threads"}},
		{"cxx-exception", []string{"uw_cxx.cc"}, []string{"-O2"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			flags := c.flags
			if c.sources[0] == "uw_main.c" && len(c.sources) == 1 {
				flags = append(append([]string{}, flags...), "-DNO_ASM") // uw_main.c without uw_asm.S
			}
			bin := testprog.Build(t, testprog.Spec{Sources: c.sources, Flags: flags, Name: "uw_main_" + c.name})
			core := kernelCore(t, bin, false, c.args...)
			got := sondeStacks(t, "--core", core, "--exe", bin)
			compareWithGdb(t, got, gdbStacks(t, bin, core))
		})
	}
}

func TestGdbName(t *testing.T) {
	for _, c := range []struct{ name, linkage, want string }{
		{"corpus::Guard::~Guard()", "_ZN6corpus5GuardD2Ev", "corpus::Guard::~Guard"},
		{"f<int>(int) const", "_Z1fIiEvi", "f<int>"},
		{"main::{lambda(int)#1}::operator()(int) const", "_ZZ4mainENKUliE_clEi", "main::{lambda(int)#1}::operator()"},
		{"__GI___clock_nanosleep", "__GI___clock_nanosleep", "__GI___clock_nanosleep"},
		{"in_sleep", "", "in_sleep"},
		{"(anonymous namespace)::g()", "_ZN12_GLOBAL__N_11gEv", "(anonymous namespace)::g"},
	} {
		if got := gdbName(c.name, c.linkage); got != c.want {
			t.Errorf("gdbName(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestGdbSymbolName(t *testing.T) {
	for _, c := range []struct{ name, linkage, want string }{
		{"work.constprop.0", "work.constprop.0", "work.constprop"},
		{"msort_with_tmp.part.0", "", "msort_with_tmp.part"},
		{"__libc_pause", "", "__libc_pause"},
		{"__pthread_kill_implementation.constprop.0", "", "__pthread_kill_implementation.constprop.0"},
		{"Work.part.0", "", "Work.part.0"},
		{"f.cold", "", "f.cold"},
		{"_ZN1a1bEv.isra.0", "_ZN1a1bEv.isra.0", "_ZN1a1bEv.isra.0"},
		{"x.", "", "x."},
	} {
		if got := gdbSymbolName(c.name, c.linkage); got != c.want {
			t.Errorf("gdbSymbolName(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestGdbFile(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"./time/../sysdeps/unix/sysv/linux/clock_nanosleep.c", "../sysdeps/unix/sysv/linux/clock_nanosleep.c"},
		{"./nptl/pthread_create.c", "./nptl/pthread_create.c"},
		{"/work/x.c", "/work/x.c"},
		{"./../x.c", "./../x.c"},
	} {
		if got := gdbFile(c.in); got != c.want {
			t.Errorf("gdbFile(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestStackSeparateDebugFiles strips the program and gives its DWARF in a
// separate file found by .gnu_debuglink (next to the binary) and by build-id
// (under --debug-dir), and compares with gdb told the same directory.
func TestStackSeparateDebugFiles(t *testing.T) {
	orig := testprog.Build(t, testprog.Spec{Sources: []string{"stk_threads.c"}, Flags: []string{"-O2", "-Wl,--build-id"}, Name: "stk-threads-O2-buildid"})
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	t.Run("debuglink", func(t *testing.T) {
		dir := t.TempDir()
		bin := filepath.Join(dir, "prog")
		run("objcopy", "--only-keep-debug", orig, filepath.Join(dir, "prog.debug"))
		run("objcopy", "--strip-all", "--add-gnu-debuglink="+filepath.Join(dir, "prog.debug"), orig, bin)
		cmd := startStackProgram(t, bin, "inline", "2")
		pid := strconv.Itoa(cmd.Process.Pid)
		compareWithGdb(t, sondeStacks(t, pid), gdbStacks(t, "-p", pid))
	})
	t.Run("build-id", func(t *testing.T) {
		f, err := elf.Open(orig)
		if err != nil {
			t.Fatal(err)
		}
		id := buildID(f)
		f.Close()
		if len(id) < 2 {
			t.Fatal("the linker wrote no build-id")
		}
		dir := t.TempDir()
		debugDir := filepath.Join(dir, "debug")
		idDir := filepath.Join(debugDir, ".build-id", fmt.Sprintf("%02x", id[0]))
		if err := os.MkdirAll(idDir, 0o755); err != nil {
			t.Fatal(err)
		}
		run("objcopy", "--only-keep-debug", orig, filepath.Join(idDir, fmt.Sprintf("%x.debug", id[1:])))
		bin := filepath.Join(dir, "prog")
		run("objcopy", "--strip-all", orig, bin)
		cmd := startStackProgram(t, bin, "qsort")
		pid := strconv.Itoa(cmd.Process.Pid)
		got := sondeStacks(t, "--debug-dir", debugDir, pid)
		// gdb searches one list of directories: ours, then the system's
		// (for libc's debug file).
		compareWithGdb(t, got, gdbStacks(t, "-iex", "set debug-file-directory "+debugDir+":/usr/lib/debug", "-p", pid))
	})
}

// buildID returns the NT_GNU_BUILD_ID note's descriptor.
func buildID(f *elf.File) []byte {
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		return nil
	}
	data, err := s.Data()
	if err != nil || len(data) < 16 {
		return nil
	}
	namesz := f.ByteOrder.Uint32(data)
	descsz := f.ByteOrder.Uint32(data[4:])
	off := 12 + (namesz+3)&^3
	if int(off+descsz) > len(data) {
		return nil
	}
	return data[off : off+descsz]
}

// TestStackJobControlStopped checks that a process stopped by SIGSTOP is
// still stopped (and untraced) after sonde read its stacks, and continues
// normally on SIGCONT; and that a running one keeps running.
func TestStackJobControlStopped(t *testing.T) {
	path := testprog.Build(t, testprog.Spec{Sources: []string{"stk_threads.c"}, Flags: []string{"-O2"}, Name: "stk-threads-O2"})
	cmd := startStackProgram(t, path, "threads", "3")
	pid := cmd.Process.Pid
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitForState(t, pid, 'T')
	got := sondeStacks(t, strconv.Itoa(pid))
	if len(got.Threads) != 4 {
		t.Errorf("%d threads, want 4", len(got.Threads))
	}
	for _, th := range got.Threads {
		if len(th.Frames) < 3 || th.StopReason != "outermost" {
			t.Errorf("thread %d: %d frames, stop %s %s", th.TID, len(th.Frames), th.StopReason, th.Error)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if st, tracer := procStateLetter(t, pid); st != 'T' || tracer != "0" {
		t.Fatalf("after sonde: state %c tracer %s, want T (still stopped) and untraced", st, tracer)
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitForState(t, pid, 'S')
	// Still the same, healthy process: sonde can read it again and it has
	// not been killed by a stray signal.
	again := sondeStacks(t, strconv.Itoa(pid))
	waitForState(t, pid, 'S')
	if len(again.Threads) != 4 {
		t.Errorf("second look: %d threads, want 4", len(again.Threads))
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("process gone after sonde: %v", err)
	}
}

// TestStackTextMatchesGdbBt compares sonde's text output with gdb's
// `thread apply all bt` line by line (thread headers, frame numbers, address
// elision, inline frames, signal frames, file:line), argument lists aside.
func TestStackTextMatchesGdbBt(t *testing.T) {
	gdbtest.Need(t)
	path := testprog.Build(t, testprog.Spec{Sources: []string{"stk_threads.c"}, Flags: []string{"-O2"}, Name: "stk-threads-O2"})
	for _, args := range [][]string{{"signal"}, {"altstack"}, {"inline", "2"}, {"qsort"}, {"deep", "12"}, {"threads", "6"}} {
		t.Run(args[0], func(t *testing.T) {
			cmd := startStackProgram(t, path, args...)
			pid := strconv.Itoa(cmd.Process.Pid)
			compareText(t, []string{"stack", pid}, []string{"-p", pid})
			if args[0] == "threads" || args[0] == "altstack" {
				corePath := filepath.Join(t.TempDir(), "core")
				if out, err := exec.Command("gcore", "-o", corePath, pid).CombinedOutput(); err != nil {
					t.Fatalf("gcore: %v\n%s", err, out)
				}
				corePath += "." + pid
				compareText(t, []string{"stack", "--core", corePath, "--exe", path}, []string{path, corePath})
			}
		})
	}
}

// TestStackTextFromLibrary: a frame in a library without debug information
// prints "from LIB" with the dynamic linker's name of the library, live and
// from a core, as gdb does.
func TestStackTextFromLibrary(t *testing.T) {
	gdbtest.Need(t)
	path := testprog.Build(t, testprog.Spec{Sources: []string{"stk_nodebug.c"}, Flags: []string{"-O0"}})
	cmd := startStackProgram(t, path)
	pid := strconv.Itoa(cmd.Process.Pid)
	out, _, _ := runCLI(t, "stack", pid)
	if !strings.Contains(out, " in _Unwind_Backtrace () from /") {
		t.Fatalf("no frame from a library without debug information:\n%s", out)
	}
	compareText(t, []string{"stack", pid}, []string{"-p", pid})
	corePath := filepath.Join(t.TempDir(), "core")
	if out, err := exec.Command("gcore", "-o", corePath, pid).CombinedOutput(); err != nil {
		t.Fatalf("gcore: %v\n%s", err, out)
	}
	corePath += "." + pid
	compareText(t, []string{"stack", "--core", corePath, "--exe", path}, []string{path, corePath})
}

// TestStackTextSymbolTableNames: without DWARF, clone names come from the
// ELF symbol table and print as gdb prints them ("work.constprop").
func TestStackTextSymbolTableNames(t *testing.T) {
	gdbtest.Need(t)
	path := testprog.Build(t, testprog.Spec{Sources: []string{"stk_clone.c"}, Flags: []string{"-O2", "-g0"}})
	cmd := startStackProgram(t, path)
	pid := strconv.Itoa(cmd.Process.Pid)
	out, _, _ := runCLI(t, "stack", pid)
	if !strings.Contains(out, " in work.constprop ()") {
		t.Fatalf("no constprop clone frame:\n%s", out)
	}
	compareText(t, []string{"stack", pid}, []string{"-p", pid})

	// C++ symbols keep their parameter lists, as in gdb.
	path = testprog.Build(t, testprog.Spec{Sources: []string{"stk_cxxsym.cc"}, Flags: []string{"-O0", "-g0"}})
	cmd = startStackProgram(t, path)
	pid = strconv.Itoa(cmd.Process.Pid)
	got := sondeStacks(t, pid)
	found := false
	for _, f := range got.Threads[0].Frames {
		found = found || f.Function != nil && *f.Function == "ns::S<int>::run(int, int)"
	}
	if !found {
		t.Errorf("no frame named ns::S<int>::run(int, int):\n%s", dumpSonde(got.Threads[0]))
	}
	compareWithGdb(t, got, gdbStacks(t, "-p", pid))
}

// compareText runs sonde with sondeArgs and gdb's `thread apply all bt`
// with gdbArgs (a live pid or an executable and core) and compares the
// output line by line, argument lists included: gdb's tail-call frames and
// the entry values recovered through them too.
func compareText(t *testing.T, sondeArgs, gdbArgs []string) {
	t.Helper()
	compareTextCmd(t, sondeArgs, gdbArgs, "thread apply all bt")
}

// compareTextCmd is compareText with gdb's command (bt full: locals too).
func compareTextCmd(t *testing.T, sondeArgs, gdbArgs []string, gdbCmd string) {
	t.Helper()
	compareTextFiltered(t, sondeArgs, gdbArgs, gdbCmd, nil)
}

// compareTextFiltered is compareTextCmd with both texts passed through
// filter first (a known difference taken out), when filter is not nil.
func compareTextFiltered(t *testing.T, sondeArgs, gdbArgs []string, gdbCmd string, filter func(string) string) {
	t.Helper()
	got, errOut, code := runCLI(t, sondeArgs...)
	if code != 0 {
		t.Fatalf("sonde %v: exit %d: %s", sondeArgs, code, errOut)
	}
	out := gdbtest.Batch(t, append(gdbtest.Ex("set pagination off", gdbCmd), gdbArgs...)...)
	if filter != nil {
		out = filter(out)
		got = filter(got)
	}
	var want []string
	inThreads := false
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Program terminated with signal ") {
			// A core's signal, before the threads (sonde adds the
			// faulting address, dropped below).
			want = append(want, l, "")
		}
		if strings.HasPrefix(l, "Thread ") {
			inThreads = true
		}
		if !inThreads || strings.HasPrefix(l, "[Inferior") || strings.HasPrefix(l, "warning: ") {
			continue
		}
		want = append(want, l)
	}
	for len(want) > 0 && want[len(want)-1] == "" {
		want = want[:len(want)-1]
	}
	got = regexp.MustCompile(`(?m)^Fault address: .*\n`).ReplaceAllString(got, "")
	gotLines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	if strings.Join(gotLines, "\n") != strings.Join(want, "\n") {
		t.Errorf("sonde %v:\n%s\ngdb (%s):\n%s", sondeArgs, strings.Join(gotLines, "\n"), gdbCmd, strings.Join(want, "\n"))
	}
}

// TestStackRelativeSourcePaths builds testdata/stk_rel the way most
// programs are built — from their directory, with relative paths — in DWARF 5
// and DWARF 4, and compares file names (and everything else) with gdb.
func TestStackRelativeSourcePaths(t *testing.T) {
	for _, dwarf := range []string{"-gdwarf-5", "-gdwarf-4"} {
		t.Run(dwarf, func(t *testing.T) {
			dir := t.TempDir()
			src := testprog.Source("stk_rel")
			if out, err := exec.Command("cp", "-r", src+"/.", dir).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v\n%s", err, out)
			}
			build := exec.Command("gcc", "-g", dwarf, "-O2", "-Iinclude", "-o", "prog", "src/stk_main.c")
			build.Dir = dir
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("gcc: %v\n%s", err, out)
			}
			cmd := startStackProgram(t, filepath.Join(dir, "prog"))
			pid := strconv.Itoa(cmd.Process.Pid)
			got := sondeStacks(t, pid)
			want := gdbStacks(t, "-p", pid)
			compareWithGdb(t, got, want)
			files := map[string]bool{}
			for _, f := range got.Threads[0].Frames {
				if f.File != nil {
					files[*f.File] = true
				}
			}
			for _, f := range []string{"src/stk_main.c", "src/stk_local.h", "include/stk_inc.h"} {
				if !files[f] {
					t.Errorf("no frame in %s; files: %v", f, files)
				}
			}
		})
	}
}

// TestStackJSONSchema checks the field names and types the issue fixes:
// {"pid", "threads": [{"tid", "name", "stop_reason", "frames": [{"index",
// "pc", "function", "linkage_name", "file", "line", "inlined", "kind",
// "module"}]}]}, with null for unknown function, file and line.
func TestStackJSONSchema(t *testing.T) {
	path := testprog.Build(t, testprog.Spec{Sources: []string{"stk_threads.c"}, Flags: []string{"-O2"}, Name: "stk-threads-O2"})
	cmd := startStackProgram(t, path, "altstack")
	out, errOut, code := runCLI(t, "stack", "--json", strconv.Itoa(cmd.Process.Pid))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if pid, ok := doc["pid"].(float64); !ok || int(pid) != cmd.Process.Pid {
		t.Errorf("pid %v", doc["pid"])
	}
	threads, _ := doc["threads"].([]any)
	if len(threads) != 1 {
		t.Fatalf("threads: %v", doc["threads"])
	}
	th := threads[0].(map[string]any)
	for _, k := range []string{"tid", "name", "stop_reason", "frames"} {
		if _, ok := th[k]; !ok {
			t.Errorf("thread lacks %q", k)
		}
	}
	kinds := map[string]bool{}
	for i, fr := range th["frames"].([]any) {
		f := fr.(map[string]any)
		for _, k := range []string{"index", "pc", "function", "linkage_name", "file", "line", "inlined", "kind", "module"} {
			if _, ok := f[k]; !ok {
				t.Errorf("frame %d lacks %q: %v", i, k, f)
			}
		}
		if idx, _ := f["index"].(float64); int(idx) != i {
			t.Errorf("frame %d has index %v", i, f["index"])
		}
		if pc, _ := f["pc"].(string); !strings.HasPrefix(pc, "0x") {
			t.Errorf("frame %d pc %v", i, f["pc"])
		}
		if _, ok := f["inlined"].(bool); !ok {
			t.Errorf("frame %d inlined %v", i, f["inlined"])
		}
		for _, k := range []string{"function", "file"} {
			if v := f[k]; v != nil {
				if _, ok := v.(string); !ok {
					t.Errorf("frame %d %s %v is neither a string nor null", i, k, v)
				}
			}
		}
		if v := f["line"]; v != nil {
			if _, ok := v.(float64); !ok {
				t.Errorf("frame %d line %v is neither a number nor null", i, v)
			}
		}
		kinds[f["kind"].(string)] = true
	}
	if !kinds["normal"] || !kinds["signal"] || len(kinds) > 3 {
		t.Errorf("frame kinds %v, want normal and signal (and inline)", kinds)
	}
}

// TestStackLeavesBusyProcessUnharmed stacks a process again and again while
// two threads compute and one sleeps and reads: the process must finish
// with the same results as undisturbed and every nanosleep completed (system
// calls restarted after each stop).
func TestStackLeavesBusyProcessUnharmed(t *testing.T) {
	path := testprog.Build(t, testprog.Spec{Sources: []string{"stk_busy.c"}, Flags: []string{"-O2"}})
	cmd := exec.Command(path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	rd := bufio.NewReader(out)
	if l, err := rd.ReadString('\n'); err != nil || l != "ready\n" {
		t.Fatalf("not ready: %q %v", l, err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	stacked := 0
	for i := 0; i < 10; i++ {
		o, errOut, code := runCLI(t, "stack", "--json", pid)
		if code != 0 {
			if st, _ := procStateLetter(t, cmd.Process.Pid); st == 'Z' {
				break // it finished (a zombie until we wait for it)
			}
			t.Fatalf("sonde stack: exit %d: %s", code, errOut)
		}
		var r stackReport
		if err := json.Unmarshal([]byte(o), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Threads) == 0 {
			t.Fatal("no threads")
		}
		stacked++
		time.Sleep(30 * time.Millisecond)
	}
	result, _ := rd.ReadString('\n')
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after %d stacks: %v; printed %q", stacked, err, result)
	}
	if !strings.HasPrefix(result, "ok ") {
		t.Fatalf("after %d stacks: %q", stacked, result)
	}
	if stacked < 3 {
		t.Errorf("only %d stacks taken while it ran", stacked)
	}
}
