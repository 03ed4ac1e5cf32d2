package ptrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Some hypervisors accept writes to the debug registers DR0-DR7 and never
// raise the debug exception: a hardware watchpoint is set without error and
// never fires (gdb's "watch" is silently inert there too). WatchpointsTrap
// finds out once per process by running a probe: a 144-byte static program,
// made here in memory (no compiler needed), that writes a word and exits;
// traced, with a write watchpoint on that word, it must stop with SIGTRAP
// at the write. It exits instead where the registers do not trap: a
// deterministic answer, no timeout.

var (
	probeOnce sync.Once
	probeErr  error
)

// ErrNoWatchTrap says the machine's debug registers do not trap.
var ErrNoWatchTrap = errors.New("this machine's debug registers do not trap (a probe's hardware watchpoint did not fire; common under hypervisors): a watchpoint would never stop")

// WatchpointsTrap reports whether hardware watchpoints fire on this
// machine: nil when they do, ErrNoWatchTrap when they do not, another
// error when the probe could not run (the answer is then unknown).
func WatchpointsTrap() error {
	probeOnce.Do(func() { probeErr = runWatchProbe() })
	return probeErr
}

// The probe's layout: loaded at probeBase, its code after the ELF and
// program headers, the watched word at probeData.
const (
	probeBase = 0x400000
	probeCode = 64 + 56
	probeData = 140
	probeSize = 144
)

// probeImage is the probe program: mov dword [rip+data], 1; mov eax, 60;
// xor edi, edi; syscall (exit 0); the word.
func probeImage() []byte {
	b := make([]byte, probeSize)
	copy(b, "\x7fELF\x02\x01\x01")
	le := binary.LittleEndian
	le.PutUint16(b[16:], 2)    // ET_EXEC
	le.PutUint16(b[18:], 0x3e) // EM_X86_64
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[24:], probeBase+probeCode) // entry
	le.PutUint64(b[32:], 64)                  // phoff
	le.PutUint16(b[52:], 64)                  // ehsize
	le.PutUint16(b[54:], 56)                  // phentsize
	le.PutUint16(b[56:], 1)                   // phnum
	ph := b[64:]
	le.PutUint32(ph[0:], 1) // PT_LOAD
	le.PutUint32(ph[4:], 7) // RWX
	le.PutUint64(ph[16:], probeBase)
	le.PutUint64(ph[24:], probeBase)
	le.PutUint64(ph[32:], probeSize)
	le.PutUint64(ph[40:], probeSize)
	le.PutUint64(ph[48:], 0x1000)
	code := []byte{
		0xc7, 0x05, 0, 0, 0, 0, 1, 0, 0, 0, // mov dword [rip+disp], 1
		0xb8, 60, 0, 0, 0, // mov eax, 60
		0x31, 0xff, // xor edi, edi
		0x0f, 0x05, // syscall
		0x90,
	}
	le.PutUint32(code[2:], uint32(probeData-(probeCode+10)))
	copy(b[probeCode:], code)
	return b
}

func runWatchProbe() error {
	fd, err := unix.MemfdCreate("sonde-watch-probe", 0)
	if err != nil {
		return fmt.Errorf("watchpoint probe: %w", err)
	}
	f := os.NewFile(uintptr(fd), "sonde-watch-probe")
	defer f.Close()
	if _, err := f.Write(probeImage()); err != nil {
		return fmt.Errorf("watchpoint probe: %w", err)
	}
	// ptrace requests must come from the thread that started the tracee.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command("/proc/self/fd/3")
	cmd.ExtraFiles = []*os.File{f}
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("watchpoint probe: %w", err)
	}
	pid := cmd.Process.Pid
	var ws unix.WaitStatus
	defer func() {
		// Once the probe's exit is collected its pid may be another
		// process's: kill only a probe still there.
		if ws.Exited() || ws.Signaled() {
			return
		}
		unix.Kill(pid, unix.SIGKILL)
		unix.Wait4(pid, &ws, 0, nil)
	}()
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		return fmt.Errorf("watchpoint probe: no stop at exec (%v, status %#x)", err, uint32(ws))
	}
	// DR0: the word; DR7: L0, write, 4 bytes.
	if err := pokeUser(pid, debugRegOffset, probeBase+probeData); err != nil {
		return fmt.Errorf("watchpoint probe: DR0: %w", err)
	}
	if err := pokeUser(pid, debugRegOffset+7*8, 1|1<<16|3<<18); err != nil {
		return fmt.Errorf("watchpoint probe: DR7: %w", err)
	}
	if err := cont(pid, 0); err != nil {
		return fmt.Errorf("watchpoint probe: %w", err)
	}
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		return fmt.Errorf("watchpoint probe: %w", err)
	}
	switch {
	case ws.Stopped() && ws.StopSignal() == unix.SIGTRAP:
		return nil
	case ws.Exited() && ws.ExitStatus() == 0:
		return ErrNoWatchTrap
	}
	return fmt.Errorf("watchpoint probe: unexpected status %#x", uint32(ws))
}
