package ptrace

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
)

// TestHaltInjectsMmap injects mmap and munmap into a program running a hot
// loop (with a thread blocked in nanosleep too) and checks the mapping
// appears in /proc/PID/maps and goes, and that the program runs on unharmed.
func TestHaltInjectsMmap(t *testing.T) {
	tg, r := newTarget(t)
	path := build(t, "tp_hotloop.c")
	proc := launch(t, tg, path, "0", "2")
	if err := proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	b := tg.Backend().(*Backend)
	const hint = 0x10000000
	var addr uint64
	err := b.Halt(proc, func(h *Halted) error {
		pcs := h.ThreadPCs()
		if len(pcs) == 0 {
			return fmt.Errorf("no thread PCs")
		}
		ret, err := h.Syscall(unix.SYS_MMAP, hint, 4096, unix.PROT_READ|unix.PROT_WRITE|unix.PROT_EXEC,
			unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE, ^uint64(0), 0)
		if err != nil {
			return err
		}
		addr = ret
		if pcs2 := h.ThreadPCs(); fmt.Sprint(pcs2) != fmt.Sprint(pcs) {
			return fmt.Errorf("thread PCs changed by the injection: %v, then %v", pcs, pcs2)
		}
		return h.WriteData(addr, []byte("sonde"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if addr != hint {
		t.Fatalf("mmap returned %#x, want %#x", addr, uint64(hint))
	}
	maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", proc.PID()))
	if !bytes.Contains(maps, []byte("10000000-10001000 rwxp")) {
		t.Fatalf("no injected mapping in\n%s", maps)
	}
	buf := make([]byte, 5)
	if _, err := proc.ReadMemory(addr, buf); err != nil || string(buf) != "sonde" {
		t.Fatalf("read back %q, %v", buf, err)
	}
	err = b.Halt(proc, func(h *Halted) error {
		ret, err := h.Syscall(unix.SYS_MUNMAP, addr, 4096)
		if err == nil && ret != 0 {
			err = fmt.Errorf("munmap returned %d", int64(ret))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	maps, _ = os.ReadFile(fmt.Sprintf("/proc/%d/maps", proc.PID()))
	if bytes.Contains(maps, []byte("10000000-10001000")) {
		t.Fatalf("mapping still there after munmap:\n%s", maps)
	}
	// Still running its loop, every thread alive.
	for _, ev := range r.all() {
		if ev.Kind == target.EventExited || (ev.Kind == target.EventStopped && ev.Reason.Kind != target.ReasonUser) {
			t.Fatalf("unexpected event %s", describe(ev))
		}
	}
	if st := taskState(proc.PID()); st == 'Z' || st == 'X' {
		t.Fatalf("process state %c", st)
	}
}

// TestHaltSyscallRestartsSleep injects into a thread blocked in nanosleep: the
// sleep must go on (restarted) and the program finish normally.
func TestHaltSyscallRestartsSleep(t *testing.T) {
	tg, r := newTarget(t)
	path := build(t, "tp_hotloop.c")
	proc := launch(t, tg, path, "late")
	if err := proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond) // in its 200 ms nanosleep
	b := tg.Backend().(*Backend)
	err := b.Halt(proc, func(h *Halted) error {
		ret, err := h.Syscall(unix.SYS_GETPID)
		if err == nil && int(ret) != proc.PID() {
			err = fmt.Errorf("getpid returned %d, want %d", int64(ret), proc.PID())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	from := 0
	ev := r.wait(t, &from, "exit", isExit(proc))
	if ev.Exit.Code != 0 || ev.Exit.Signal != 0 {
		t.Fatalf("exit %s", ev.Exit)
	}
}
