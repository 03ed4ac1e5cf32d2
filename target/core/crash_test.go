package core

import (
	"syscall"
	"testing"

	"github.com/sondedbg/sonde/target"
)

// Cores of programs that crashed on their own: the stop reasons.

// TestKernelCoreFault checks the stop reason of a real fault: the faulting
// thread is stopped with ReasonException, SIGSEGV and the address; the other
// threads with ReasonContainer.
func TestKernelCoreFault(t *testing.T) {
	requireFileCores(t)
	p := startTarget(t, buildTarget(t), 0)
	p.allowCore(t, 0x33)
	if _, err := p.stdin.Write([]byte("fault 2\n")); err != nil {
		t.Fatal(err)
	}
	corePath := p.waitCore(t)
	_, c := openCore(t, corePath, Options{})
	checkThreads(t, c, p)
	checkSignal(t, c, p.tids[2], target.ReasonException, syscall.SIGSEGV)
	th := c.Thread(p.tids[2])
	if th.SigInfo == nil || th.SigInfo.Addr != 0x18 || th.SigInfo.Code != 1 /* SEGV_MAPERR */ {
		t.Errorf("siginfo %+v, want SIGSEGV SEGV_MAPERR at 0x18", th.SigInfo)
	}
	_, r, pc := th.Context.State()
	t.Logf("%s: %v: %s at 0x%x", th.Context, r.Kind, r.Message, pc)
	// Worded as the live backend words the same fault.
	if want := "segmentation fault: address not mapped at 0x18"; r.Message != want {
		t.Errorf("message %q, want %q", r.Message, want)
	}
	// The faulting instruction is in core_target's worker, in its text.
	text := false
	m, _ := c.Process().MemoryMap()
	for _, reg := range m {
		if reg.Contains(pc) && reg.FileName == p.exe && reg.Perm&target.PermExec != 0 {
			text = true
		}
	}
	if !text {
		t.Errorf("fault pc 0x%x is not in %s's text", pc, p.exe)
	}
	buf := make([]byte, 1)
	if _, err := c.Process().ReadMemory(pc, buf); err != nil {
		t.Errorf("reading the faulting instruction: %v", err)
	}
	requireGDB(t)
	checkRegisters(t, c, p, gdbRegisters(t, p.exe, corePath))
}

// TestKernelCoreAbort checks a thread that called abort(3): stopped with
// ReasonSignal SIGABRT (sent by the thread itself, not a fault), the other
// threads with ReasonContainer, registers as gdb reads them.
func TestKernelCoreAbort(t *testing.T) {
	requireFileCores(t)
	p := startTarget(t, buildTarget(t), 0)
	p.allowCore(t, 0x33)
	if _, err := p.stdin.Write([]byte("abort 0\n")); err != nil {
		t.Fatal(err)
	}
	corePath := p.waitCore(t)
	_, c := openCore(t, corePath, Options{})
	checkThreads(t, c, p)
	checkSignal(t, c, p.tids[0], target.ReasonSignal, syscall.SIGABRT)
	if si := c.Thread(p.tids[0]).SigInfo; si == nil || si.IsFault() || si.SenderPID != int32(p.pid) {
		t.Errorf("siginfo %+v, want SIGABRT sent by pid %d", si, p.pid)
	}
	requireGDB(t)
	checkRegisters(t, c, p, gdbRegisters(t, p.exe, corePath))
}
