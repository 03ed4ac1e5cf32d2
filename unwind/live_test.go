package unwind

// A minimal live client for tests, until the target/ptrace backend exists:
// it starts a test program under ptrace (ASLR off, like gdb), lets it run to
// the raise(SIGTRAP) it stops itself with, seizes its other threads, and
// serves the engine's callbacks from PtraceGetRegs, /proc/PID/mem, the
// memory map and the ELF files (symbol names from .symtab/.dynsym).

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ianlancetaylor/demangle"
	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/arch"
)

type liveTarget struct {
	moduleSet
	t    testing.TB
	pid  int
	cmd  *exec.Cmd
	mem  *os.File
	tids []int // main thread first, then the others in /proc order
}

// moduleSet is the lookup-ip side shared by the test clients: modules sorted
// by address, names from ELF symbol tables.
type moduleSet struct {
	modules []*Module
}

type symtab struct {
	syms []elf.Symbol // FUNC symbols with a size, sorted by address
}

// startLive runs path with args under ptrace until it raises SIGTRAP (other
// signals are delivered), then seizes and interrupts its other threads. It
// locks the calling goroutine to its OS thread for the rest of the test: only
// that thread may issue ptrace requests.
func startLive(t testing.TB, path string, args ...string) *liveTarget {
	t.Helper()
	return startLiveSig(t, unix.SIGTRAP, path, args...)
}

// startLiveSig is startLive stopping at the first stop signal stopSig.
func startLiveSig(t testing.TB, stopSig unix.Signal, path string, args ...string) *liveTarget {
	t.Helper()
	runtime.LockOSThread() // never unlocked: the thread exits with the test goroutine
	const addrNoRandomize = 0x0040000
	old, _, _ := unix.RawSyscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
	unix.RawSyscall(unix.SYS_PERSONALITY, old|addrNoRandomize, 0, 0)
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	cmd.Stderr = os.Stderr
	err := cmd.Start()
	unix.RawSyscall(unix.SYS_PERSONALITY, old, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	lt := &liveTarget{t: t, pid: cmd.Process.Pid, cmd: cmd}
	t.Cleanup(lt.kill)
	var ws unix.WaitStatus
	if _, err := unix.Wait4(lt.pid, &ws, unix.WALL, nil); err != nil || !ws.Stopped() {
		t.Fatalf("waiting for exec stop: %v %v", err, ws)
	}
	sig := 0
	for {
		if err := unix.PtraceCont(lt.pid, sig); err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Wait4(lt.pid, &ws, unix.WALL, nil); err != nil {
			t.Fatal(err)
		}
		if !ws.Stopped() {
			t.Fatalf("%s %v: ended before stopping: %v", path, args, ws)
		}
		if ws.StopSignal() == stopSig {
			break
		}
		sig = int(ws.StopSignal())
	}
	lt.tids = []int{lt.pid}
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", lt.pid))
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		if tid == lt.pid || tid == 0 {
			continue
		}
		if err := unix.PtraceSeize(tid); err != nil {
			t.Fatalf("seize %d: %v", tid, err)
		}
		if err := unix.PtraceInterrupt(tid); err != nil {
			t.Fatalf("interrupt %d: %v", tid, err)
		}
		if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
			t.Fatal(err)
		}
		lt.tids = append(lt.tids, tid)
	}
	lt.mem, err = os.Open(fmt.Sprintf("/proc/%d/mem", lt.pid))
	if err != nil {
		t.Fatal(err)
	}
	lt.loadModules()
	return lt
}

func (lt *liveTarget) kill() {
	if lt.mem != nil {
		lt.mem.Close()
	}
	lt.cmd.Process.Kill() // by pidfd: the pid may have been reaped by a Wait4 already
	// Reap the other threads first: the leader's exit status is only
	// available once its whole group is gone.
	var ws unix.WaitStatus
	for i := len(lt.tids) - 1; i >= 0; i-- {
		unix.Wait4(lt.tids[i], &ws, unix.WALL, nil)
	}
}

// loadModules builds one Module per executable mapping of a file (and the vDSO).
func (lt *liveTarget) loadModules() {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", lt.pid))
	if err != nil {
		lt.t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.Contains(f[1], "x") {
			continue
		}
		rng := strings.SplitN(f[0], "-", 2)
		start, _ := strconv.ParseUint(rng[0], 16, 64)
		end, _ := strconv.ParseUint(rng[1], 16, 64)
		off, _ := strconv.ParseUint(f[2], 16, 64)
		name := f[5]
		var ef *elf.File
		switch {
		case name == "[vdso]":
			img := make([]byte, end-start)
			n, _ := lt.mem.ReadAt(img, int64(start))
			ef, err = elf.NewFile(bytes.NewReader(img[:n]))
			off = 0
		case strings.HasPrefix(name, "/"):
			ef, err = elf.Open(name)
		default:
			continue
		}
		if err != nil {
			lt.t.Fatalf("%s: %v", name, err)
		}
		m := &Module{Name: name, Start: start, End: end}
		for _, p := range ef.Progs {
			if p.Type == elf.PT_LOAD && p.Off <= off && off < p.Off+p.Filesz {
				m.Bias = start - (p.Vaddr + (off - p.Off))
				break
			}
		}
		src, err := ReadSources(ef)
		if err != nil {
			lt.t.Fatal(err)
		}
		m.SetSources(src)
		m.Client = readSymtab(ef)
		lt.modules = append(lt.modules, m)
	}
	sort.Slice(lt.modules, func(i, j int) bool { return lt.modules[i].Start < lt.modules[j].Start })
}

func readSymtab(f *elf.File) *symtab {
	st := &symtab{}
	seen := map[uint64]bool{}
	for _, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, _ := get()
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) != elf.STT_FUNC && elf.ST_TYPE(s.Info) != elf.STT_GNU_IFUNC || s.Size == 0 || s.Value == 0 || seen[s.Value] {
				continue
			}
			seen[s.Value] = true
			st.syms = append(st.syms, s)
		}
	}
	sort.Slice(st.syms, func(i, j int) bool { return st.syms[i].Value < st.syms[j].Value })
	return st
}

func (st *symtab) lookup(addr uint64) (elf.Symbol, bool) {
	i := sort.Search(len(st.syms), func(i int) bool { return st.syms[i].Value > addr }) - 1
	if i < 0 || addr >= st.syms[i].Value+st.syms[i].Size {
		return elf.Symbol{}, false
	}
	return st.syms[i], true
}

// LookupModule implements LookupIP.
func (lt *moduleSet) LookupModule(pc uint64) (*Module, error) {
	i := sort.Search(len(lt.modules), func(i int) bool { return lt.modules[i].Start > pc }) - 1
	if i < 0 || pc >= lt.modules[i].End {
		return nil, nil
	}
	return lt.modules[i], nil
}

// SymbolInfo implements LookupIP from ELF symbol tables (no inline frames).
func (lt *moduleSet) SymbolInfo(m *Module, pc uint64) ([]Symbol, error) {
	if m == nil {
		return nil, nil
	}
	s, ok := m.Client.(*symtab).lookup(pc - m.Bias)
	if !ok {
		return nil, nil
	}
	// gdb prints C++ names demangled without parameters.
	return []Symbol{{Function: demangle.Filter(s.Name, demangle.NoParams), LinkageName: s.Name, FuncStart: s.Value + m.Bias}}, nil
}

// thread is the copy-in side for one thread: its registers and the process memory.
type thread struct {
	lt   *liveTarget
	tid  int
	regs unix.PtraceRegs
}

func (lt *liveTarget) thread(tid int) *thread {
	th := &thread{lt: lt, tid: tid}
	if err := unix.PtraceGetRegs(tid, &th.regs); err != nil {
		lt.t.Fatalf("getregs %d: %v", tid, err)
	}
	return th
}

func (th *thread) ReadMemory(buf []byte, addr uint64) (int, error) {
	if addr > 1<<63 {
		return 0, nil
	}
	n, err := th.lt.mem.ReadAt(buf, int64(addr))
	if n < 0 {
		n = 0
	}
	return n, err
}

func (th *thread) ReadRegister(reg int) (uint64, bool) {
	r := &th.regs
	switch reg {
	case arch.DwarfRAX:
		return r.Rax, true
	case arch.DwarfRDX:
		return r.Rdx, true
	case arch.DwarfRCX:
		return r.Rcx, true
	case arch.DwarfRBX:
		return r.Rbx, true
	case arch.DwarfRSI:
		return r.Rsi, true
	case arch.DwarfRDI:
		return r.Rdi, true
	case arch.DwarfRBP:
		return r.Rbp, true
	case arch.DwarfRSP:
		return r.Rsp, true
	case 8:
		return r.R8, true
	case 9:
		return r.R9, true
	case 10:
		return r.R10, true
	case 11:
		return r.R11, true
	case 12:
		return r.R12, true
	case 13:
		return r.R13, true
	case 14:
		return r.R14, true
	case 15:
		return r.R15, true
	case arch.DwarfRIP:
		return r.Rip, true
	}
	return 0, false
}

// ourFrame is one physical frame of our walk, for comparison with gdb.
type ourFrame struct {
	pc   uint64
	name string
	kind FrameKind
}

func (lt *liveTarget) walk(tid int) ([]ourFrame, Trace) {
	u := New(lt.thread(tid), lt, nil)
	if err := u.Init(); err != nil {
		lt.t.Fatal(err)
	}
	tr := u.Backtrace(BacktraceOptions{})
	var out []ourFrame
	for _, f := range tr.Frames {
		out = append(out, ourFrame{pc: f.PC, name: f.Symbol.Function, kind: f.Kind})
	}
	return out, tr
}
