package core

import (
	"bufio"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// This file runs testdata/core_target.c and records what the live process had,
// so the tests can compare a core of it against the truth.

// liveProc is a running core_target.
type liveProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	exe   string
	dir   string // its working directory: kernel cores land here
	pid   int
	tids  []int // the workers
	vars  map[string]uint64
}

func buildTarget(t testing.TB) string {
	return testprog.Build(t, testprog.Spec{Sources: []string{"core_target.c"}, Flags: []string{"-O1"}})
}

// startTarget starts core_target and waits for its READY line.
func startTarget(t testing.TB, exe string, bigMiB int) *liveProc {
	t.Helper()
	p := &liveProc{exe: exe, dir: t.TempDir(), vars: map[string]uint64{}}
	p.cmd = exec.Command(exe, strconv.Itoa(bigMiB))
	p.cmd.Dir = p.dir
	p.cmd.Stderr = os.Stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("core_target: %v", err)
	}
	for _, f := range strings.Fields(line)[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "pid":
			p.pid, _ = strconv.Atoi(v)
		case "tids":
			for _, s := range strings.Split(v, ",") {
				n, _ := strconv.Atoi(s)
				p.tids = append(p.tids, n)
			}
		default:
			n, _ := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
			p.vars[k] = n
		}
	}
	if p.pid != p.cmd.Process.Pid || len(p.tids) != 3 {
		t.Fatalf("core_target said %q", line)
	}
	p.waitBlocked(t)
	return p
}

// waitBlocked waits until every thread sits in read(2): main prints READY
// before it reaches fgets, and its first call through the PLT still changes
// memory (lazy binding writes the GOT).
func (p *liveProc) waitBlocked(t testing.TB) {
	t.Helper()
	for i := 0; i < 500; i++ {
		blocked := 0
		for _, tid := range append([]int{p.pid}, p.tids...) {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", p.pid, tid))
			if f := strings.Fields(string(b)); len(f) > 0 && f[0] == "0" {
				blocked++
			}
		}
		if blocked == 1+len(p.tids) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("core_target's threads did not all block in read(2)")
}

// allowCore lets the kernel dump p (RLIMIT_CORE unlimited) with the given
// coredump_filter.
func (p *liveProc) allowCore(t testing.TB, filter uint32) {
	t.Helper()
	lim := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if err := unix.Prlimit(p.pid, unix.RLIMIT_CORE, &lim, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/coredump_filter", p.pid), []byte(fmt.Sprintf("0x%x", filter)), 0); err != nil {
		t.Fatal(err)
	}
}

// requireFileCores makes sure the kernel writes core files into the dumping
// process's working directory for the test's duration. A pattern that pipes
// cores to a helper (systemd-coredump, apport) or names another directory is
// replaced by "core" when running as root and restored afterwards; otherwise
// the test is skipped, as there is no core to read.
func requireFileCores(t testing.TB) {
	t.Helper()
	const knob = "/proc/sys/kernel/core_pattern"
	old, err := os.ReadFile(knob)
	if err != nil {
		t.Skipf("cannot read %s: %v", knob, err)
	}
	pattern := strings.TrimSpace(string(old))
	if !strings.HasPrefix(pattern, "|") && !strings.Contains(pattern, "/") {
		return
	}
	if os.Geteuid() != 0 {
		t.Skipf("core_pattern is %q and changing it needs root", pattern)
	}
	if err := os.WriteFile(knob, []byte("core"), 0); err != nil {
		t.Skipf("cannot set core_pattern: %v", err)
	}
	t.Cleanup(func() { os.WriteFile(knob, old, 0) })
}

// killForCore sends sig to thread tid and returns the core the kernel wrote.
func (p *liveProc) killForCore(t testing.TB, sig syscall.Signal, tid int) string {
	t.Helper()
	if err := unix.Tgkill(p.pid, tid, sig); err != nil {
		t.Fatal(err)
	}
	return p.waitCore(t)
}

// waitCore waits for p to die with a core dump and returns the core's path.
func (p *liveProc) waitCore(t testing.TB) string {
	t.Helper()
	p.cmd.Wait()
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.CoreDump() {
		t.Fatalf("core_target ended with %v, no core dump", p.cmd.ProcessState)
	}
	m, _ := filepath.Glob(filepath.Join(p.dir, "core*"))
	if len(m) != 1 {
		t.Fatalf("expected one core file in %s, found %q (core_pattern?)", p.dir, m)
	}
	return m[0]
}

// liveMap is one line of /proc/PID/maps.
type liveMap struct {
	start, end, offset uint64
	perm               string
	name               string
}

func readMaps(t testing.TB, pid int) []liveMap {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []liveMap
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		var m liveMap
		fmt.Sscanf(f[0], "%x-%x", &m.start, &m.end)
		m.perm = f[1]
		m.offset, _ = strconv.ParseUint(f[2], 16, 64)
		if len(f) >= 6 {
			m.name = strings.Join(f[5:], " ")
		}
		out = append(out, m)
	}
	return out
}

// sample is the live process's bytes at one address.
type sample struct {
	addr uint64
	want []byte
	kind string // text, data, heap, stack, vdso, lib, anon
}

// kindOf classifies a mapping for the sample report.
func kindOf(m liveMap, exe string) string {
	switch {
	case m.name == "[heap]":
		return "heap"
	case m.name == "[stack]":
		return "stack"
	case m.name == "[vdso]":
		return "vdso"
	case m.name == exe && strings.Contains(m.perm, "x"):
		return "text"
	case m.name == exe:
		return "data"
	case m.name == "":
		return "anon" // thread stacks, big allocations, bss tail
	}
	return "lib"
}

// sampleMemory reads n random 16-byte windows from the process's readable
// mappings through /proc/PID/mem. Mappings are picked uniformly, not by size,
// so small ones (the vDSO, the executable's data) get their share.
func sampleMemory(t testing.TB, pid int, maps []liveMap, exe string, n int, rng *rand.Rand) []sample {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var readable []liveMap
	for _, m := range maps {
		if m.perm[0] == 'r' && m.name != "[vvar]" && m.name != "[vvar_vclock]" && m.name != "[vsyscall]" {
			readable = append(readable, m)
		}
	}
	var out []sample
	for len(out) < n {
		m := readable[rng.Intn(len(readable))]
		addr := m.start + uint64(rng.Int63n(int64(m.end-m.start-16)))
		buf := make([]byte, 16)
		if _, err := f.ReadAt(buf, int64(addr)); err != nil {
			t.Fatalf("/proc/%d/mem at 0x%x (%s %s): %v", pid, addr, m.perm, m.name, err)
		}
		out = append(out, sample{addr: addr, want: buf, kind: kindOf(m, exe)})
	}
	return out
}

// gdbRegisters runs gdb with args and parses `thread apply all info
// registers`: tid -> register name -> value.
func gdbRegisters(t testing.TB, args ...string) map[int]map[string]uint64 {
	t.Helper()
	out := gdbtest.Batch(t, append([]string{"-ex", "set pagination off",
		"-ex", "thread apply all info registers"}, args...)...)
	regs := map[int]map[string]uint64{}
	var cur map[string]uint64
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "Thread ") {
			i := strings.Index(l, "(LWP ")
			if i < 0 {
				continue
			}
			digits := l[i+5:]
			digits = digits[:strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' })]
			tid, _ := strconv.Atoi(digits)
			cur = map[string]uint64{}
			regs[tid] = cur
			// "Thread 2 (Thread 0x7f.. (LWP n))": libthread_db's pthread_t,
			// which on x86-64 is the thread pointer, fs_base.
			if j := strings.Index(l, "(Thread 0x"); j >= 0 {
				f := strings.Fields(l[j+8:])
				if v, err := strconv.ParseUint(strings.TrimPrefix(f[0], "0x"), 16, 64); err == nil {
					cur["pthread_self"] = v
				}
			}
			continue
		}
		f := strings.Fields(l)
		if cur == nil || len(f) < 2 || !strings.HasPrefix(f[1], "0x") {
			continue
		}
		v, err := strconv.ParseUint(f[1][2:], 16, 64)
		if err == nil {
			cur[f[0]] = v
		}
	}
	if len(regs) == 0 {
		t.Fatalf("gdb printed no registers:\n%s", out)
	}
	return regs
}

func requireGDB(t testing.TB) {
	gdbtest.Need(t)
}
