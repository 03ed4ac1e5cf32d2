package unwind

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/arch/x86/x86asm"
	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/internal/gdbtest"
)

// Stops at asynchronous positions — the first and second instruction of a
// function, its ret, inside a PLT stub, inside the vDSO — where a profiler's
// sample or a breakpoint lands. The test plants an int3, and gdb gets the same
// address as `break *ADDR`.

// startLiveAt runs path under ptrace to the exec stop, resolves the breakpoint
// address with where (given the modules mapped at that point: the executable,
// ld.so and the vDSO), runs to it, and rewinds the pc onto it.
func startLiveAt(t *testing.T, path string, args []string, where func(*liveTarget) uint64) (*liveTarget, uint64) {
	t.Helper()
	runtime.LockOSThread()
	const addrNoRandomize = 0x0040000
	old, _, _ := unix.RawSyscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
	unix.RawSyscall(unix.SYS_PERSONALITY, old|addrNoRandomize, 0, 0)
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	err := cmd.Start()
	unix.RawSyscall(unix.SYS_PERSONALITY, old, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	lt := &liveTarget{t: t, pid: cmd.Process.Pid, cmd: cmd, tids: []int{cmd.Process.Pid}}
	t.Cleanup(lt.kill)
	var ws unix.WaitStatus
	if _, err := unix.Wait4(lt.pid, &ws, unix.WALL, nil); err != nil || !ws.Stopped() {
		t.Fatalf("exec stop: %v %v", err, ws)
	}
	if lt.mem, err = os.Open(fmt.Sprintf("/proc/%d/mem", lt.pid)); err != nil {
		t.Fatal(err)
	}
	lt.loadModules()
	addr := where(lt)
	var word [8]byte
	if _, err := unix.PtracePeekData(lt.pid, uintptr(addr), word[:]); err != nil {
		t.Fatalf("peek %#x: %v", addr, err)
	}
	patched := word
	patched[0] = 0xcc
	if _, err := unix.PtracePokeData(lt.pid, uintptr(addr), patched[:]); err != nil {
		t.Fatalf("poke %#x: %v", addr, err)
	}
	for {
		if err := unix.PtraceCont(lt.pid, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Wait4(lt.pid, &ws, unix.WALL, nil); err != nil {
			t.Fatal(err)
		}
		if !ws.Stopped() {
			t.Fatalf("ended before the breakpoint at %#x: %v", addr, ws)
		}
		if ws.StopSignal() == unix.SIGTRAP {
			break
		}
	}
	unix.PtracePokeData(lt.pid, uintptr(addr), word[:])
	var regs unix.PtraceRegs
	unix.PtraceGetRegs(lt.pid, &regs)
	if regs.Rip != addr+1 {
		t.Fatalf("stopped at %#x, not at the breakpoint %#x", regs.Rip, addr)
	}
	regs.Rip = addr
	unix.PtraceSetRegs(lt.pid, &regs)
	lt.modules = nil
	lt.loadModules() // libc is mapped now
	return lt, addr
}

// gdbBacktraceAt runs path under gdb to a breakpoint at addr.
func gdbBacktraceAt(t *testing.T, path string, args []string, addr uint64) []gdbFrame {
	t.Helper()
	cmds := []string{"set backtrace past-main on", "set backtrace past-entry on", "starti",
		fmt.Sprintf("break *%#x", addr), "continue"}
	return gdbtest.Backtraces(t, cmds, append([]string{"--args", path}, args...)...)[0].Frames
}

// symbolAddr is the runtime address of a function in the module whose name
// contains file.
func (lt *liveTarget) symbolAddr(file, name string) (uint64, uint64) {
	for _, m := range lt.modules {
		if !strings.Contains(m.Name, file) {
			continue
		}
		for _, s := range m.Client.(*symtab).syms {
			if s.Name == name || "__vdso_"+s.Name == name {
				return s.Value + m.Bias, s.Size
			}
		}
	}
	lt.t.Fatalf("no %s in %s", name, file)
	return 0, 0
}

// instructions decodes the function at addr.
func (lt *liveTarget) instructions(addr, size uint64) []struct {
	addr uint64
	inst x86asm.Inst
} {
	code := make([]byte, size)
	n, _ := lt.mem.ReadAt(code, int64(addr))
	var out []struct {
		addr uint64
		inst x86asm.Inst
	}
	for off := 0; off < n; {
		inst, err := x86asm.Decode(code[off:n], 64)
		if err != nil {
			break
		}
		out = append(out, struct {
			addr uint64
			inst x86asm.Inst
		}{addr + uint64(off), inst})
		off += inst.Len
	}
	return out
}

func TestLiveAsyncPositions(t *testing.T) {
	gdbtest.Need(t)
	builds := []liveCase{
		{name: "O2", flags: []string{"-O2"}},
		// No CFI at all in the program: frame 0 at entry, after push %rbp and
		// at ret needs the prologue heuristics; elsewhere the frame-pointer chain.
		{name: "nocfi", flags: []string{"-O1", "-g0", "-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"}},
	}
	for _, c := range builds {
		t.Run(c.name, func(t *testing.T) { asyncPositions(t, c) })
	}
}

func asyncPositions(t *testing.T, c liveCase) {
	bin := buildCase(t, c)
	args := []string{"calls"}
	callee := func(lt *liveTarget) (uint64, uint64) { return lt.symbolAddr(filepath.Base(bin), "callee") }
	nth := func(n int) func(lt *liveTarget) uint64 {
		return func(lt *liveTarget) uint64 { return lt.instructions(callee(lt))[n].addr }
	}
	ret := func(lt *liveTarget) uint64 {
		for _, in := range lt.instructions(callee(lt)) {
			if in.inst.Op == x86asm.RET {
				return in.addr
			}
		}
		lt.t.Fatal("no ret in callee")
		return 0
	}
	// The PLT stub callee calls (getppid@plt), at its first and second instruction.
	plt := func(n int) func(lt *liveTarget) uint64 {
		return func(lt *liveTarget) uint64 {
			for _, in := range lt.instructions(callee(lt)) {
				if in.inst.Op == x86asm.CALL {
					rel, ok := in.inst.Args[0].(x86asm.Rel)
					if !ok {
						continue
					}
					stub := in.addr + uint64(in.inst.Len) + uint64(int64(rel))
					return lt.instructions(stub, 16)[n].addr
				}
			}
			lt.t.Fatal("no call in callee")
			return 0
		}
	}
	vdso := func(n int) func(lt *liveTarget) uint64 {
		return func(lt *liveTarget) uint64 {
			a, size := lt.symbolAddr("[vdso]", "__vdso_clock_gettime")
			return lt.instructions(a, size)[n].addr
		}
	}
	cases := []struct {
		name  string
		where func(*liveTarget) uint64
	}{
		{"entry", nth(0)}, {"second", nth(1)}, {"third", nth(2)}, {"ret", ret},
		{"plt", plt(0)}, {"plt2", plt(1)},
		{"vdso-entry", vdso(0)}, {"vdso-second", vdso(1)}, {"vdso-fourth", vdso(3)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lt, addr := startLiveAt(t, bin, args, tc.where)
			ours, tr := lt.walk(lt.pid)
			if tr.Stop != StopOutermost {
				t.Errorf("stop %v (%v)", tr.Stop, tr.Err)
			}
			gdb := gdbBacktraceAt(t, bin, args, addr)
			t.Logf("at %#x (ours | gdb):\n%s", addr, formatStacks(ours, physical(gdb)))
			compareWithGDB(t, ours, gdb)
		})
	}
}
