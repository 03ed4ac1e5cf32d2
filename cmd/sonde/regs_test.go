package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
)

// generalRegisters are the registers both gdb and sonde print for x86-64.
var generalRegisters = []string{"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
	"r12", "r13", "r14", "r15", "rip", "eflags", "cs", "ss", "ds", "es", "fs", "gs", "fs_base", "gs_base"}

// registerLines parses `info registers`-shaped lines into name -> the rest.
func registerLines(text string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 {
			m[f[0]] = strings.Join(f[1:], " ")
		}
	}
	return m
}

// TestRegsMatchesGdb compares `sonde regs` with gdb's `info registers` for a
// process whose main thread sits in pause(): every general register must agree,
// raw and natural value (except rip's symbol, which gdb may name differently).
func TestRegsMatchesGdb(t *testing.T) {
	gdbtest.Need(t)
	cmd := startBlocked(t)
	pid := cmd.Process.Pid
	out, errOut, code := runCLI(t, "regs", strconv.Itoa(pid))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	waitForState(t, pid, 'S')
	gdbOut := gdbtest.Batch(t, "-p", strconv.Itoa(pid), "-ex", "info registers")
	waitForState(t, pid, 'S')
	blocks := strings.Split(out, "\n\n")
	if len(blocks) != 5 {
		t.Fatalf("%d thread blocks, want 5:\n%s", len(blocks), out)
	}
	var main string
	for _, b := range blocks {
		if strings.HasPrefix(b, "Thread "+strconv.Itoa(pid)+" ") {
			main = b
		}
	}
	if main == "" {
		t.Fatalf("no block for the main thread:\n%s", out)
	}
	// -t TID: that thread's block alone.
	one, errOut, code := runCLI(t, "regs", "-t", strconv.Itoa(pid), strconv.Itoa(pid))
	waitForState(t, pid, 'S')
	if code != 0 || !strings.HasPrefix(one, "Thread "+strconv.Itoa(pid)+" ") || strings.Count(one, "\n\n") != 0 ||
		strings.Join(strings.Fields(one), " ") != strings.Join(strings.Fields(main), " ") {
		t.Errorf("regs -t %d: exit %d %s\n%s", pid, code, errOut, one)
	}
	if _, errOut, code := runCLI(t, "regs", "-t", "1", strconv.Itoa(pid)); code != 1 || !strings.Contains(errOut, "has no thread 1") {
		t.Errorf("regs -t 1: exit %d %s", code, errOut)
	}
	waitForState(t, pid, 'S')
	ours, theirs := registerLines(main), registerLines(gdbOut)
	for _, name := range generalRegisters {
		a, b := ours[name], theirs[name]
		if b == "" && strings.HasSuffix(name, "_base") {
			continue // gdb 13 leaves fs_base and gs_base out of its listing
		}
		if name == "rip" {
			a, b = strings.Fields(a)[0], strings.Fields(b)[0]
		}
		if a == "" || a != b {
			t.Errorf("%s: sonde %q, gdb %q", name, ours[name], theirs[name])
		}
	}
	// The column layout is gdb's too.
	for _, l := range strings.Split(main, "\n")[1:] {
		if len(l) < 36 || l[15] != '0' || l[34] != ' ' {
			t.Errorf("line not in gdb's columns: %q", l)
		}
	}
}

func TestRegsJSONAndJobControlStop(t *testing.T) {
	cmd := startBlocked(t)
	pid := cmd.Process.Pid
	cmd.Process.Signal(syscall.SIGSTOP)
	waitForState(t, pid, 'T')
	out, errOut, code := runCLI(t, "regs", "--json", strconv.Itoa(pid))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// A process that was stopped by job control stays stopped.
	waitForState(t, pid, 'T')
	var r regsJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.PID != pid || len(r.Threads) != 5 {
		t.Fatalf("pid %d, %d threads", r.PID, len(r.Threads))
	}
	for _, th := range r.Threads {
		if len(th.Registers) < len(generalRegisters) || th.Registers[16].Name != "rip" || !strings.HasPrefix(th.Registers[16].Value, "0x") {
			t.Fatalf("thread %d: %+v", th.TID, th.Registers)
		}
	}
	cmd.Process.Signal(syscall.SIGCONT)
	waitForState(t, pid, 'S')
}
