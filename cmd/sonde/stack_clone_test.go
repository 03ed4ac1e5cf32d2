package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/arch/x86/x86asm"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/symbols"
)

// afterCloneSyscall returns the offset in glibc's clone3 of the instruction
// after its syscall, found by decoding the function.
func afterCloneSyscall(t *testing.T, libc string) int {
	t.Helper()
	b, err := symbols.Open(libc, nil)
	if err != nil {
		t.Skipf("%s: %v", libc, err)
	}
	defer b.Close()
	insts, err := b.LookupFunction("clone3")
	if err != nil || len(insts) == 0 {
		t.Skipf("no clone3 in %s (%v): not a glibc with clone3", libc, err)
	}
	addr := insts[0].Entry
	for _, p := range b.ELF().Progs {
		if p.Type != 1 || addr < p.Vaddr || addr >= p.Vaddr+p.Filesz {
			continue
		}
		code := make([]byte, 64)
		if _, err := p.ReadAt(code, int64(addr-p.Vaddr)); err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(code); {
			inst, err := x86asm.Decode(code[off:], 64)
			if err != nil {
				break
			}
			off += inst.Len
			if inst.Op == x86asm.SYSCALL {
				return off
			}
		}
	}
	t.Fatalf("no syscall in the first 64 bytes of clone3 at %#x", addr)
	return 0
}

// TestStackInsideClone3 stops a thread-churning program (testdata/stk_churn)
// with a breakpoint on the instruction after clone3's syscall, where glibc
// has no CFI, and dumps a core there: the parent must unwind as gdb does
// (clone3 ← __clone_internal ← create_thread ← pthread_create ← spawn ←
// main), the child must end at clone3 (its outermost frame; gdb prints one
// more frame, a zero pc read from the new stack, and stops).
func TestStackInsideClone3(t *testing.T) {
	gdbtest.Need(t)
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	off := afterCloneSyscall(t, libc)
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"stk_churn.c"}, Flags: []string{"-O2"}})
	core := filepath.Join(t.TempDir(), "core")
	out, err := gdbtest.Run("-ex", "break main", "-ex", "run",
		"-ex", "break *((char *)clone3+"+strconv.Itoa(off)+")", "-ex", "continue",
		"-ex", "gcore "+core, "-ex", "kill", "--args", prog, "20")
	if _, err2 := os.Stat(core); err != nil || err2 != nil {
		t.Fatalf("gdb: %v %v\n%s", err, err2, out)
	}
	got := sondeStacks(t, "--core", core, "--exe", prog)
	want := gdbStacks(t, prog, core)
	sawParent := false
	for tid, frames := range want {
		if n := len(frames); n == 2 && frames[1].pc == 0 && frames[0].function == "clone3" {
			want[tid] = frames[:1] // the child: see above
		}
		for _, f := range want[tid] {
			sawParent = sawParent || f.function == "spawn"
		}
	}
	if !sawParent {
		t.Fatalf("no thread of the core is in spawn (gdb):\n%s", out)
	}
	compareWithGdb(t, got, want)
	for _, th := range got.Threads {
		if th.StopReason != "outermost" {
			t.Errorf("thread %d: stop %s %s", th.TID, th.StopReason, th.Error)
		}
	}
}

// TestStackSamplingThreadChurn samples a live thread-churning program the
// way a user runs `sonde stack` on it: every thread of every sample must
// unwind to its outermost frame, wherever thread creation and exit are
// caught (issue 21: 1 sample in 5 stopped at clone3 with no-unwind-info).
func TestStackSamplingThreadChurn(t *testing.T) {
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"stk_churn.c"}, Flags: []string{"-O2"}})
	cmd := exec.Command(prog)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	inClone := 0
	for i := 0; i < 15; i++ {
		r := stacksOrHang(t, strconv.Itoa(cmd.Process.Pid))
		for _, th := range r.Threads {
			if th.StopReason != "outermost" {
				t.Errorf("sample %d, thread %d: stop %s %s\n%s", i, th.TID, th.StopReason, th.Error, dumpSonde(th))
			}
			if len(th.Frames) > 0 && th.Frames[0].Function != nil && *th.Frames[0].Function == "clone3" {
				inClone++
			}
		}
	}
	t.Logf("%d of the threads sampled were in clone3", inClone)
}

// stacksOrHang is sondeStacks with a guard: one run of `sonde stack` on
// this target once did not finish in ten minutes (not reproduced since in
// 150 runs and 8 runs of this test); if it happens again the test fails
// with sonde's goroutine dump (SIGQUIT) instead of blocking the suite.
func stacksOrHang(t *testing.T, pid string) stackReport {
	t.Helper()
	c := exec.Command(sondeCLI(t), "stack", "--json", pid)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("sonde stack %s: %v\n%s", pid, err, errOut.String())
		}
	case <-time.After(2 * time.Minute):
		c.Process.Signal(syscall.SIGQUIT)
		<-done
		t.Fatalf("sonde stack %s did not finish; its goroutines:\n%s", pid, errOut.String())
	}
	var r stackReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("sonde stack --json: %v\n%s", err, out.String())
	}
	return r
}
