package testprog

import (
	"debug/elf"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// debugRegOffset is offsetof(struct user, u_debugreg) on x86-64.
const debugRegOffset = 848

var (
	hwOnce   sync.Once
	hwReason string
)

// RequireHardwareDebug skips the test, with a message that says why, when this
// machine does not deliver hardware debug-register traps. Some hypervisors accept
// writes to DR0–DR7 but never raise the #DB exception; gdb's `watch` and `hbreak`
// are silently inert there too. The check runs once per test binary: a small
// program is started under ptrace with an execution breakpoint in DR0 on a
// function it calls, and must stop with SIGTRAP before it exits.
func RequireHardwareDebug(t testing.TB) {
	t.Helper()
	hwOnce.Do(func() { hwReason = probeHardwareDebug() })
	if hwReason != "" {
		t.Skipf("SKIP (machine): hardware debug registers do not trap here: %s", hwReason)
	}
}

// HardwareDebugWorks reports whether this machine's debug registers trap,
// and if not why (the check RequireHardwareDebug skips on).
func HardwareDebugWorks() (bool, string) {
	hwOnce.Do(func() { hwReason = probeHardwareDebug() })
	return hwReason == "", hwReason
}

func probeHardwareDebug() string {
	path, err := BuildE(Spec{Sources: []string{"hwdebug_probe.c"}, Flags: []string{"-O0", "-no-pie"}})
	if err != nil {
		return err.Error()
	}
	addr, err := symbolAddr(path, "probe_target")
	if err != nil {
		return err.Error()
	}
	// ptrace requests must come from the thread that attached.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		return err.Error()
	}
	pid := cmd.Process.Pid
	var ws unix.WaitStatus
	defer func() {
		// Once the probe's exit is collected its pid may be another
		// process's (a test's tracee): kill only a probe still there.
		if ws.Exited() || ws.Signaled() {
			return
		}
		unix.Kill(pid, unix.SIGKILL)
		unix.Wait4(pid, &ws, 0, nil)
	}()
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		return fmt.Sprintf("probe program did not stop at exec (%v, status %#x)", err, uint32(ws))
	}
	if err := pokeUser(pid, debugRegOffset, uint64(addr)); err != nil {
		return "writing DR0: " + err.Error()
	}
	if err := pokeUser(pid, debugRegOffset+7*8, 1); err != nil { // L0, execute, length 1
		return "writing DR7: " + err.Error()
	}
	if err := unix.PtraceCont(pid, 0); err != nil {
		return err.Error()
	}
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		return err.Error()
	}
	if ws.Stopped() && ws.StopSignal() == unix.SIGTRAP {
		return ""
	}
	return fmt.Sprintf("an execution breakpoint at 0x%x did not fire (the program went on: status %#x)", addr, uint32(ws))
}

func pokeUser(pid int, off uintptr, v uint64) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_POKEUSR, uintptr(pid), off, uintptr(v), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func symbolAddr(path, name string) (uint64, error) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return 0, err
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value, nil
		}
	}
	return 0, fmt.Errorf("%s: no symbol %s", path, name)
}
