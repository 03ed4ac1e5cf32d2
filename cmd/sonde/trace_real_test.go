package main

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
)

// Tests from the first real-program trial of sonde trace
// (bench/trace/REAL-PROGRAMS.md): each reproduces, with a program the test
// builds, the trait of a Debian program that made sonde trace fail.

// TestTraceStripped: Debian's executables are stripped (sqlite3, redis-server,
// python3): no main symbol. A probe in a library is planted once the
// program reached its entry point (the libraries loaded), not refused with
// "function main: no code found"; every call is counted.
func TestTraceStripped(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := testprog.Build(t, testprog.Spec{Sources: []string{"pr_count.c"}, Flags: []string{"-O2", "-s"}, Name: "pr_count_stripped"})
	if out, _ := exec.Command("nm", path).CombinedOutput(); len(out) > 0 && !strings.Contains(string(out), "no symbols") {
		t.Fatalf("%s is not stripped: nm says %.200s", path, out)
	}
	const n = 500
	cmd := exec.Command(sonde, "trace", "--json", "--probe", "snprintf", "--", path, fmt.Sprint(n), "lib")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	prog, rep := splitTraceOutput(t, out)
	if want := untracedOutput(t, path, fmt.Sprint(n), "lib"); prog != want {
		t.Errorf("program output %q, untraced %q", prog, want)
	}
	if r := rowOf(t, rep, "snprintf"); r.Hits != n {
		t.Errorf("snprintf: %+v, want %d hits", r, n)
	}
}

// TestTraceKilledLeavesNoTrap: a sonde trace -p killed with SIGKILL leaves
// its jump probe (which keeps counting into a cache nobody reads: harmless)
// but no int3: the dynamic linker's library-load hook, planted to resolve
// the locations, is removed once they are, so the program's next dlopen
// does not die of SIGTRAP (memcached/python3 in the trial: ld.so's text
// differed from its file by one byte after kill -9).
func TestTraceKilledLeavesNoTrap(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := testprog.Build(t, testprog.Spec{Sources: []string{"tr_dlloop.c"}, Flags: []string{"-O2"}})
	prog := exec.Command(path)
	if err := prog.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- prog.Wait() }()
	t.Cleanup(func() { prog.Process.Kill(); <-exited })
	pid := prog.Process.Pid
	time.Sleep(50 * time.Millisecond)
	tr := exec.Command(sonde, "trace", "-p", fmt.Sprint(pid), "--probe", "hot")
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the probe: hot's text differs from the file once it is in.
	deadline := time.Now().Add(60 * time.Second)
	for {
		mem, file := testprog.MappedText(t, pid, path)
		if !bytes.Equal(mem, file) {
			break
		}
		if time.Now().After(deadline) {
			tr.Process.Kill()
			tr.Wait()
			t.Fatal("the probe was not planted within 60 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the probe planted, the hook removal follows it
	tr.Process.Kill()
	tr.Wait()
	// Untraced again (the kernel detaches a dead tracer's tracees).
	for deadline := time.Now().Add(30 * time.Second); ; {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil || bytes.Contains(st, []byte("State:\tZ")) {
			t.Fatalf("the program died after sonde was killed: %v", <-exited)
		}
		if bytes.Contains(st, []byte("TracerPid:\t0\n")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still traced after sonde was killed:\n%s", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Several dlopen/dlclose rounds later the program still runs.
	select {
	case err := <-exited:
		exited <- err
		t.Fatalf("the program died after sonde was killed: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	ldso := ""
	for _, l := range strings.Split(string(maps), "\n") {
		if fs := strings.Fields(l); len(fs) >= 6 && strings.Contains(fs[5], "/ld-linux") {
			ldso = fs[5]
		}
	}
	if ldso == "" {
		t.Fatalf("no dynamic linker in\n%s", maps)
	}
	if mem, file := testprog.MappedText(t, pid, ldso); !bytes.Equal(mem, file) {
		t.Errorf("%s's text differs from its file after sonde was killed (an int3 left)", ldso)
	}
}

// TestTraceForkChild: a fork child of a traced program (bash's subshells,
// nginx's workers after a reload) runs the application's code: the backend
// writes the bytes under every jump probe back into its copy of memory
// before it runs, as it does under breakpoints. Its output (which shows
// hot's first bytes as the child sees them) equals the untraced one; the
// parent's calls are counted, the child's are not (it is not traced).
func TestTraceForkChild(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := testprog.Build(t, testprog.Spec{Sources: []string{"tr_fork.c"}, Flags: []string{"-O2"}})
	const n = 1000
	cmd := exec.Command(sonde, "trace", "--json", "--probe", "hot", "--", path, fmt.Sprint(n))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	prog, rep := splitTraceOutput(t, out)
	if want := untracedOutput(t, path, fmt.Sprint(n)); prog != want {
		t.Errorf("program output\n%s\nuntraced\n%s", prog, want)
	}
	if r := rowOf(t, rep, "hot"); r.Kind != "probe" || r.Hits != n {
		t.Errorf("hot: %+v, want a probe with the parent's %d hits", r, n)
	}
}

// TestTraceEndbr: functions built with -fcf-protection start with endbr64
// (Debian's libstdc++: __cxa_throw, operator new). The probe relocates it
// into the trampoline like any position-independent instruction: a jump
// probe, not a breakpoint fallback saying the bytes "do not decode"; every
// call counted, and timed with --latency.
func TestTraceEndbr(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := testprog.Build(t, testprog.Spec{Sources: []string{"pr_count.c"}, Flags: []string{"-O2", "-fcf-protection=full"}, Name: "pr_count_cet"})
	if out, err := exec.Command("objdump", "-d", "--no-show-raw-insn", path).Output(); err == nil && !strings.Contains(string(out), "endbr64") {
		t.Fatalf("gcc -fcf-protection=full put no endbr64 in %s", path)
	}
	const n = 100000
	for _, flags := range [][]string{{"--probe", "hot", "--probe", "ripload"}, {"--latency", "--probe", "hot"}} {
		args := append(append([]string{"trace", "--json"}, flags...), "--", path, fmt.Sprint(n))
		out, err := exec.Command(sonde, args...).Output()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		prog, rep := splitTraceOutput(t, out)
		if want := untracedOutput(t, path, fmt.Sprint(n)); prog != want {
			t.Errorf("program output %q, untraced %q", prog, want)
		}
		for _, r := range rep.Probes {
			if r.Kind != "probe" || r.Hits != n || r.Fallback != "" {
				t.Errorf("%v: %s: %+v, want a jump probe with %d hits", flags, r.Location, r, n)
			}
			if r.Latency != nil && r.Latency.Timed != n {
				t.Errorf("%s: %d timed, want %d", r.Location, r.Latency.Timed, n)
			}
		}
	}
}

// TestTraceSignalStorm: SIGALRM every 200 µs (python3 with a signal
// handler and an interval timer) while a probe is hit millions of times.
// A signal that stops a thread inside a trampoline, and arrives again while
// sonde steps the thread out, is delivered once at the application pc after
// it: the program neither dies (python3 did, of SIGSEGV: it was resumed at
// an address inside the patched range) nor is a hit counted twice.
func TestTraceSignalStorm(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := testprog.Build(t, testprog.Spec{Sources: []string{"tr_sigloop.c"}, Flags: []string{"-O2"}})
	const n = 5_000_000
	cmd := exec.Command(sonde, "trace", "--json", "--probe", "hot", "--", path, fmt.Sprint(n))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, stderr.Bytes())
	}
	if strings.Contains(stderr.String(), "killed by signal") {
		t.Errorf("the program died: %s", stderr.Bytes())
	}
	prog, rep := splitTraceOutput(t, out)
	if want := untracedOutput(t, path, fmt.Sprint(n)); prog != want {
		t.Errorf("program output %q, untraced %q", prog, want)
	}
	if r := rowOf(t, rep, "hot"); r.Kind != "probe" || r.Hits != n {
		t.Errorf("hot: %+v, want a probe with exactly %d hits", r, n)
	}
}

// TestTraceExec: a program that execs another one (bash's `exec PROG`)
// reports the hits it made before the exec, read at its execve: at the exec
// event the old address space, its code cache and counters, are gone
// (bash reported 0 hits).
func TestTraceExec(t *testing.T) {
	sonde := testprog.Sonde(t)
	path := testprog.Build(t, testprog.Spec{Sources: []string{"tr_exec.c"}, Flags: []string{"-O2"}})
	echo, err := exec.LookPath("echo")
	if err != nil {
		t.Skip("no echo program to exec")
	}
	const n = 5000
	args := []string{fmt.Sprint(n), echo, "execed"}
	out, err := exec.Command(sonde, append([]string{"trace", "--json", "--probe", "hot", "--", path}, args...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	prog, rep := splitTraceOutput(t, out)
	if want := untracedOutput(t, path, args...); prog != want {
		t.Errorf("program output %q, untraced %q", prog, want)
	}
	if r := rowOf(t, rep, "hot"); r.Kind != "probe" || r.Hits != n {
		t.Errorf("hot: %+v, want a probe with the %d hits before the exec", r, n)
	}
}

// TestTraceStaticStripped: a static executable without symbols
// (busybox-static): sonde runs a launched program to its entry, where a
// static program's exec already stops — it must not wait there for a
// breakpoint the resume steps over ("the program exited before its entry
// point"). A probe by address counts every call (a breakpoint: with no
// symbol the site cannot be checked).
func TestTraceStaticStripped(t *testing.T) {
	sonde := testprog.Sonde(t)
	full, err := testprog.BuildE(testprog.Spec{Sources: []string{"pr_count.c"}, Flags: []string{"-O2", "-static", "-no-pie"}, Name: "pr_count_static"})
	if err != nil {
		t.Skipf("no static glibc to link with: %v", err)
	}
	f, err := elf.Open(full)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := f.Symbols()
	f.Close()
	var hot uint64
	for _, s := range syms {
		if s.Name == "hot" {
			hot = s.Value
		}
	}
	if hot == 0 {
		t.Fatal("no symbol hot in the static build")
	}
	path := filepath.Join(t.TempDir(), "pr_count_static_stripped")
	if out, err := exec.Command("objcopy", "--strip-all", full, path).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	const n = 300
	out, err := exec.Command(sonde, "trace", "--json", "--probe", fmt.Sprintf("*%#x", hot), "--", path, fmt.Sprint(n)).Output()
	if err != nil {
		t.Fatal(err)
	}
	prog, rep := splitTraceOutput(t, out)
	if want := untracedOutput(t, path, fmt.Sprint(n)); prog != want {
		t.Errorf("program output %q, untraced %q", prog, want)
	}
	if len(rep.Probes) != 1 || rep.Probes[0].Hits != n {
		t.Errorf("%+v, want one row with %d hits", rep.Probes, n)
	}
}
