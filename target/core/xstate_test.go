package core

import (
	"bufio"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/ptrace"
)

// TestAVX512RegistersLiveAndKernelCore checks the XSAVE layout conversion end
// to end on this machine's CPU: k1, zmm17 and ymm3's upper half hold known
// values, read live through ptrace and from the kernel's core of the same
// process (AMD CPUs put AVX-512 state 256 bytes lower than Intel ones, and the
// kernel writes the CPU's layout). gdb's gcore is no oracle here: gdb 13
// assumes Intel's offsets and writes what it misread.
func TestAVX512RegistersLiveAndKernelCore(t *testing.T) {
	cpu, _ := os.ReadFile("/proc/cpuinfo")
	if !strings.Contains(string(cpu), " avx512f") || !strings.Contains(string(cpu), " avx512bw") {
		t.Skip("this CPU has no AVX-512F/BW: nothing to check")
	}
	requireFileCores(t)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"core_avx512.c"}, Flags: []string{"-O0", "-mavx512f", "-mavx512bw"}})
	dir := t.TempDir()
	cmd := exec.Command("bash", "-c", "ulimit -c unlimited && exec \"$0\"", prog)
	cmd.Dir = dir
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("program said %q %v", line, err)
	}
	pid := cmd.Process.Pid

	check := func(from string, r *target.Registers) {
		t.Helper()
		get := func(name string) []byte {
			v, err := r.Get(r.Arch.ByName(name))
			if err != nil {
				t.Fatalf("%s: %s: %v", from, name, err)
			}
			return v
		}
		if k := binary.LittleEndian.Uint64(get("k1")); k != 0xa5a5 {
			t.Errorf("%s: k1 = %#x, want 0xa5a5", from, k)
		}
		z := get("zmm17")
		for i := 0; i < 8; i++ {
			if got, want := binary.LittleEndian.Uint64(z[8*i:]), uint64(i+1)*0x1111111111111111; got != want {
				t.Errorf("%s: zmm17 word %d = %#x, want %#x", from, i, got, want)
			}
		}
		if hi := binary.LittleEndian.Uint64(get("ymm3h")); hi != 0x3333333333333333 {
			t.Errorf("%s: ymm3's upper half starts %#x", from, hi)
		}
	}

	tg, err := ptrace.New()
	if err != nil {
		t.Fatal(err)
	}
	proc, err := tg.Attach(pid, target.AttachOptions{Stop: true})
	if err != nil {
		t.Fatal(err)
	}
	live, err := proc.Children()[0].Registers()
	if err != nil {
		t.Fatal(err)
	}
	check("live", live)
	tg.Close()

	if err := cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	cores, _ := filepath.Glob(filepath.Join(dir, "core*"))
	if len(cores) != 1 {
		t.Fatalf("no kernel core in %s (core_pattern?): %v", dir, cores)
	}
	ct, err := Open(cores[0], Options{Executable: prog})
	if err != nil {
		t.Fatal(err)
	}
	defer ct.Close()
	regs, err := ct.Processes()[0].Children()[0].Registers()
	if err != nil {
		t.Fatal(err)
	}
	check("kernel core", regs)
}
