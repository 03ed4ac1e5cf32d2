package main

import (
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
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target/core"
)

// crashCore builds testdata/stk_crash.c, runs a copy of it from a directory
// of its own until it dies of SIGSEGV, and returns the copy's path and the
// core the kernel wrote.
func crashCore(t *testing.T) (exe, corePath string) {
	t.Helper()
	built := testprog.Build(t, testprog.Spec{Sources: []string{"stk_crash.c"}, Flags: []string{"-O1", "-pthread"}, Name: "stk-crash-O1"})
	exe = filepath.Join(t.TempDir(), "stk_crash")
	copyFile(t, built, exe)
	return exe, kernelCore(t, exe, false)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	st, _ := in.Stat()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkCrashSignal checks the JSON "signal" of stk_crash's core: SIGSEGV,
// SEGV_MAPERR, at address 4, in the worker thread.
func checkCrashSignal(t *testing.T, r stackReport) {
	t.Helper()
	s := r.Signal
	if s == nil || s.Number != 11 || s.Name != "SIGSEGV" || s.Code == nil || *s.Code != 1 || s.Address == nil || *s.Address != "0x4" || s.TID == r.PID {
		t.Errorf("signal %+v, want SIGSEGV code 1 (SEGV_MAPERR) at 0x4 in the worker", s)
	}
}

// TestStackCoreMovedExecutable: the executable is no longer where the core
// says; --exe names its new place and symbols and unwinding use it, as gdb
// given the same file. Without --exe, sonde says the file is missing and
// names no function from elsewhere.
func TestStackCoreMovedExecutable(t *testing.T) {
	exe, corePath := crashCore(t)
	moved := filepath.Join(t.TempDir(), "moved", "prog")
	copyFile(t, exe, moved)
	if err := os.Remove(exe); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "stack", "--json", "--core", corePath, "--exe", moved)
	if code != 0 || strings.Contains(errOut, "warning") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	var got stackReport
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	checkCrashSignal(t, got)
	compareWithGdb(t, got, gdbStacks(t, moved, corePath))
	if !hasFunction(got, "deref") {
		t.Errorf("no deref frame:\n%s", out)
	}
	// The text: how it ended, the faulting address, and frame 0's address
	// (the fault is inside a line), against gdb's bt.
	compareText(t, []string{"stack", "--core", corePath, "--exe", moved}, []string{moved, corePath})
	text, _, _ := runCLI(t, "stack", "--core", corePath, "--exe", moved)
	if !strings.HasPrefix(text, "Program terminated with signal SIGSEGV, Segmentation fault.\nFault address: 0x4 (SEGV_MAPERR") {
		t.Errorf("text does not start with the signal:\n%s", text)
	}

	// Threads in the same order in text and JSON (gdb's: highest number
	// first; the crashed worker is thread 1, the core's first).
	lwps := regexp.MustCompile(`(?m)^Thread \d+ \(.*LWP (\d+)\)`).FindAllStringSubmatch(text, -1)
	if len(lwps) != len(got.Threads) || len(lwps) != 2 {
		t.Fatalf("%d threads in text, %d in JSON", len(lwps), len(got.Threads))
	}
	for i, m := range lwps {
		if m[1] != strconv.Itoa(got.Threads[i].TID) {
			t.Errorf("thread %d: LWP %s in text, %d in JSON", i, m[1], got.Threads[i].TID)
		}
	}
	if got.Threads[1].TID != got.Signal.TID {
		t.Errorf("the crashed thread %d is not last (thread 1)", got.Signal.TID)
	}

	// -t TID: that thread alone; a TID the process does not have is an
	// error naming the ones it has.
	one := sondeStacks(t, "--core", corePath, "--exe", moved, "-t", strconv.Itoa(got.Signal.TID))
	if len(one.Threads) != 1 || one.Threads[0].TID != got.Signal.TID || !hasFunction(one, "deref") {
		t.Errorf("-t %d: %+v", got.Signal.TID, one.Threads)
	}
	if _, errOut, code := runCLI(t, "stack", "--core", corePath, "--exe", moved, "-t", "1"); code != 1 || !strings.Contains(errOut, "has no thread 1 (its threads: [") {
		t.Errorf("-t 1: exit %d, %s", code, errOut)
	}

	// A stripped executable with its DWARF under --debug-dir (by build-id).
	f, err := elf.Open(moved)
	if err != nil {
		t.Fatal(err)
	}
	id := buildID(f)
	f.Close()
	debugDir := t.TempDir()
	idDir := filepath.Join(debugDir, ".build-id", fmt.Sprintf("%02x", id[0]))
	os.MkdirAll(idDir, 0o755)
	stripped := filepath.Join(t.TempDir(), "stripped")
	for _, args := range [][]string{{"--only-keep-debug", moved, filepath.Join(idDir, fmt.Sprintf("%x.debug", id[1:]))}, {"--strip-all", moved, stripped}} {
		if out, err := exec.Command("objcopy", args...).CombinedOutput(); err != nil {
			t.Fatalf("objcopy %v: %v\n%s", args, err, out)
		}
	}
	compareWithGdb(t, sondeStacks(t, "--core", corePath, "--exe", stripped, "--debug-dir", debugDir),
		gdbStacks(t, "-iex", "set debug-file-directory "+debugDir+":/usr/lib/debug", stripped, corePath))

	// The core layer's problems on stderr: a core cut short.
	data, err := os.ReadFile(corePath)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "core.cut")
	os.WriteFile(cut, data[:len(data)-3*4096], 0o600)
	if _, errOut, code := runCLI(t, "stack", "--core", cut, "--exe", moved); code != 0 || !strings.Contains(errOut, "sonde: warning: truncated") {
		t.Errorf("a truncated core: exit %d, stderr:\n%s", code, errOut)
	}

	_, errOut, code = runCLI(t, "stack", "--core", corePath)
	if code != 0 || !strings.Contains(errOut, "mapped file "+exe+" not found") || !strings.Contains(errOut, "--exe") {
		t.Errorf("without --exe: exit %d, stderr:\n%s", code, errOut)
	}
}

func hasFunction(r stackReport, name string) bool {
	for _, th := range r.Threads {
		for _, f := range th.Frames {
			if f.Function != nil && *f.Function == name {
				return true
			}
		}
	}
	return false
}

// TestStackCoreRebuiltExecutable: a different build of the program sits at
// the path the core records. sonde refuses it (a warning naming it and both
// build-ids) rather than symbolizing with it; --exe with the right file
// gives gdb's stacks.
func TestStackCoreRebuiltExecutable(t *testing.T) {
	exe, corePath := crashCore(t)
	saved := filepath.Join(t.TempDir(), "saved")
	copyFile(t, exe, saved)
	rebuilt := testprog.Build(t, testprog.Spec{Sources: []string{"stk_crash.c"}, Flags: []string{"-O1", "-pthread", "-DREBUILT"}, Name: "stk-crash-O1-rebuilt"})
	copyFile(t, rebuilt, exe)

	out, errOut, code := runCLI(t, "stack", "--json", "--core", corePath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, exe+" is not the file the process mapped") || !strings.Contains(errOut, "build-id") {
		t.Errorf("no warning about the rebuilt %s:\n%s", exe, errOut)
	}
	var got stackReport
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	for _, th := range got.Threads {
		for _, f := range th.Frames {
			if f.Module == exe && f.Function != nil {
				t.Errorf("thread %d: frame %d named %q from the rebuilt file", th.TID, f.Index, *f.Function)
			}
		}
	}
	checkCrashSignal(t, got)

	// The right file given with --exe; the rebuilt one at the recorded path
	// is left alone.
	got = sondeStacks(t, "--core", corePath, "--exe", saved)
	compareWithGdb(t, got, gdbStacks(t, saved, corePath))
	// A wrong --exe is refused too, naming both files.
	_, errOut, _ = runCLI(t, "stack", "--core", corePath, "--exe", rebuilt)
	if !strings.Contains(errOut, rebuilt+" is not the "+exe+" the process mapped") {
		t.Errorf("a wrong --exe: no warning naming both files:\n%s", errOut)
	}
}

// TestStackCoreSysroot: the crashed machine's files under a sysroot (the
// executable and every library at their recorded paths below it), the
// executable gone from its own path; compared with gdb told the same
// sysroot. A library missing from the sysroot is reported under the
// sysroot's path.
func TestStackCoreSysroot(t *testing.T) {
	exe, corePath := crashCore(t)
	tg, err := core.Open(corePath, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	seen := map[string]bool{}
	for _, fm := range core.Of(tg).FileMappings() {
		if !seen[fm.Path] && strings.HasPrefix(fm.Path, "/") {
			seen[fm.Path] = true
			files = append(files, fm.Path)
		}
	}
	tg.Close()
	sysroot := t.TempDir()
	// A merged-/usr system's links (gdb finds libraries by the dynamic
	// linker's names, /lib/..., the core records /usr/lib/...).
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if dest, err := os.Readlink("/" + l); err == nil {
			os.Symlink(dest, filepath.Join(sysroot, l))
		}
	}
	libc := ""
	for _, f := range files {
		copyFile(t, f, filepath.Join(sysroot, f))
		if strings.Contains(filepath.Base(f), "libc.so") {
			libc = f
		}
	}
	if err := os.Remove(exe); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "stack", "--json", "--core", corePath, "--sysroot", sysroot)
	if code != 0 || strings.Contains(errOut, "warning") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	var got stackReport
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	compareWithGdb(t, got, gdbStacks(t, "-iex", "set sysroot "+sysroot, filepath.Join(sysroot, exe), corePath))
	if !hasFunction(got, "deref") || !hasFunction(got, "start_thread") {
		t.Errorf("no deref or start_thread frame:\n%s", out)
	}

	if libc == "" {
		t.Fatalf("no libc among the mapped files %q", files)
	}
	if err := os.Remove(filepath.Join(sysroot, libc)); err != nil {
		t.Fatal(err)
	}
	_, errOut, _ = runCLI(t, "stack", "--core", corePath, "--sysroot", sysroot)
	if !strings.Contains(errOut, "mapped file "+libc+" not found (tried [\""+filepath.Join(sysroot, libc)) {
		t.Errorf("libc missing from the sysroot: stderr\n%s", errOut)
	}
}

// TestStackGcoreMovedExecutable: a core written by gdb's gcore (all of the
// text in the core, so memory needs no file) of a program since moved: the
// symbols and CFI still come from the file --exe names, as in gdb; and a gcore
// says nothing of a signal (gdb stopped the process), as gdb.
func TestStackGcoreMovedExecutable(t *testing.T) {
	if _, err := exec.LookPath("gcore"); err != nil {
		t.Skip("gcore (gdb) is not installed")
	}
	built := testprog.Build(t, testprog.Spec{Sources: []string{"stk_threads.c"}, Flags: []string{"-O2"}, Name: "stk-threads-O2"})
	exe := filepath.Join(t.TempDir(), "stk_threads")
	copyFile(t, built, exe)
	cmd := startStackProgram(t, exe, "threads", "3")
	pid := strconv.Itoa(cmd.Process.Pid)
	corePath := filepath.Join(t.TempDir(), "core")
	if out, err := exec.Command("gcore", "-o", corePath, pid).CombinedOutput(); err != nil {
		t.Fatalf("gcore: %v\n%s", err, out)
	}
	corePath += "." + pid
	cmd.Process.Kill()
	cmd.Wait()
	moved := filepath.Join(t.TempDir(), "prog")
	copyFile(t, exe, moved)
	os.Remove(exe)
	got := sondeStacks(t, "--core", corePath, "--exe", moved)
	if got.Signal != nil {
		t.Errorf("a gcore with a signal: %+v", got.Signal)
	}
	if !hasFunction(got, "main") {
		t.Errorf("no main frame: %+v", got.Threads)
	}
	compareWithGdb(t, got, gdbStacks(t, moved, corePath))
	compareText(t, []string{"stack", "--core", corePath, "--exe", moved}, []string{moved, corePath})
	// Without --exe: memory needs no file, the symbols do; said on stderr.
	if _, errOut, code := runCLI(t, "stack", "--core", corePath); code != 0 || !strings.Contains(errOut, "mapped file "+exe+" not found") {
		t.Errorf("without --exe: exit %d, stderr:\n%s", code, errOut)
	}
}
