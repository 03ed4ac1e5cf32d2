package core

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/target"
)

// This file holds the comparisons shared by the kernel-core and gcore tests.

// openCore opens a core and closes it when the test ends.
func openCore(t testing.TB, path string, opts Options) (*target.Target, *Core) {
	t.Helper()
	tg, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { tg.Close() })
	return tg, Of(tg)
}

// checkThreads compares the core's process and threads with the live ones.
func checkThreads(t *testing.T, c *Core, p *liveProc) {
	t.Helper()
	if c.PID() != p.pid || c.Process().PID() != p.pid {
		t.Errorf("pid %d, want %d", c.PID(), p.pid)
	}
	if c.Process().Name() != "core_target" {
		t.Errorf("process name %q, want core_target", c.Process().Name())
	}
	var got, want []int
	for _, th := range c.Process().Children() {
		got = append(got, th.TID())
	}
	want = append([]int{p.pid}, p.tids...)
	sort.Ints(got)
	sort.Ints(want)
	if !equalInts(got, want) {
		t.Errorf("threads %v, want %v", got, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// gdbNames are the registers gdb's `info registers` prints that live in
// user_regs_struct.
var gdbNames = []string{"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
	"r12", "r13", "r14", "r15", "rip", "eflags", "cs", "ss", "ds", "es", "fs", "gs", "fs_base", "gs_base"}

// checkRegisters compares every thread's general registers with want (gdb's
// view, per tid) and the workers' ymm8 with the pattern core_target loaded.
func checkRegisters(t *testing.T, c *Core, p *liveProc, want map[int]map[string]uint64) {
	t.Helper()
	for _, th := range c.Process().Children() {
		regs, err := th.Registers()
		if err != nil {
			t.Fatalf("%s: %v", th, err)
		}
		w := want[th.TID()]
		if w == nil {
			t.Errorf("gdb shows no thread %d", th.TID())
			continue
		}
		for _, name := range gdbNames {
			gv, ok := w[name]
			if !ok && name == "fs_base" {
				// gdb 13 prints no fs_base for cores whose XSAVE layout it
				// does not know; libthread_db's thread pointer is the same.
				gv, ok = w["pthread_self"]
			}
			if !ok && name == "fs_base" {
				continue // gdb had no libthread_db either (the core lacks libpthread's data)
			}
			if !ok && name == "gs_base" {
				gv, ok = 0, true // always 0 in x86-64 Linux user space
			}
			if !ok {
				t.Errorf("thread %d: gdb printed no %s", th.TID(), name)
				continue
			}
			v, err := regs.Uint64(arch.AMD64.ByName(name))
			if err != nil || v != gv {
				t.Errorf("thread %d: %s = 0x%x (%v), gdb says 0x%x", th.TID(), name, v, err, gv)
			}
		}
		_, reason, pc := th.State()
		if reason == nil || pc != regs.PC() {
			t.Errorf("thread %d: stop reason %v at 0x%x, rip 0x%x", th.TID(), reason, pc, regs.PC())
		}
		for k, tid := range p.tids {
			if tid != th.TID() {
				continue
			}
			var pattern [32]byte
			for i := range pattern {
				pattern[i] = byte(0x10*(k+1) + i)
			}
			lo, err1 := regs.Get(arch.AMD64.ByName("xmm8"))
			hi, err2 := regs.Get(arch.AMD64.ByName("ymm8h"))
			if err1 != nil || err2 != nil || !bytes.Equal(append(lo, hi...), pattern[:]) {
				t.Errorf("thread %d: ymm8 = %x %x (%v %v), core_target loaded %x", tid, lo, hi, err1, err2, pattern)
			}
		}
	}
}

// checkMemory reads every sample through the Target. A read either returns
// the live bytes or fails with a *target.MemoryError caused by a
// *MissingError; never other bytes. It returns the count of failed reads per
// kind of mapping.
func checkMemory(t *testing.T, proc *target.Context, samples []sample) map[string]int {
	t.Helper()
	missing := map[string]int{}
	kinds := map[string]int{}
	for _, s := range samples {
		kinds[s.kind]++
		buf := make([]byte, len(s.want))
		n, err := proc.ReadMemory(s.addr, buf)
		if err != nil {
			var me *target.MemoryError
			var miss *MissingError
			if !errors.As(err, &me) || !errors.As(err, &miss) || !errors.Is(err, target.ErrInvalidAddress) {
				t.Errorf("read 0x%x (%s): error %v is not a MemoryError with a MissingError", s.addr, s.kind, err)
			}
			if me != nil && (me.Valid != n || me.Addr != s.addr+uint64(n)) {
				t.Errorf("read 0x%x: MemoryError says %d valid up to 0x%x, read returned %d", s.addr, me.Valid, me.Addr, n)
			}
			if !bytes.Equal(buf[:n], s.want[:n]) {
				t.Errorf("read 0x%x (%s): the %d valid bytes %x differ from the live %x", s.addr, s.kind, n, buf[:n], s.want[:n])
			}
			missing[s.kind]++
			continue
		}
		if !bytes.Equal(buf, s.want) {
			t.Errorf("read 0x%x (%s): got %x, the live process had %x", s.addr, s.kind, buf, s.want)
		}
	}
	for _, k := range []string{"text", "data", "heap", "stack", "vdso", "lib", "anon"} {
		if kinds[k] == 0 {
			t.Errorf("no sample in %s", k)
		}
	}
	t.Logf("%d samples per kind %v; unavailable %v", len(samples), kinds, missing)
	return missing
}

// checkMap compares the memory map with /proc/PID/maps as the live process had
// it. strict requires every live mapping (except [vsyscall]) to be there.
func checkMap(t *testing.T, proc *target.Context, live []liveMap, strict bool) {
	t.Helper()
	regions, err := proc.MemoryMap()
	if err != nil {
		t.Fatal(err)
	}
	byStart := map[uint64]target.MemoryRegion{}
	for _, r := range regions {
		byStart[r.Addr] = r
	}
	matched := 0
	for _, m := range live {
		if m.name == "[vsyscall]" && !strict {
			continue // gcore leaves it out
		}
		r, ok := byStart[m.start]
		if !ok {
			if strict {
				t.Errorf("live mapping %x-%x %s %s is not in the core's map", m.start, m.end, m.perm, m.name)
			}
			continue
		}
		matched++
		permOK := r.Perm.String()[:3] == m.perm[:3]
		if !strict && m.perm[:3] == "---" && r.Perm.String()[:3] == "r--" {
			permOK = true // gcore writes guard pages as readable PT_LOADs (gdb's choice, not the core reader's)
		}
		if r.End() != m.end || !permOK {
			t.Errorf("region %v, live %x-%x %s %s", r, m.start, m.end, m.perm, m.name)
		}
		switch {
		case strings.HasPrefix(m.name, "/"):
			if r.FileName != m.name || r.Offset != m.offset {
				t.Errorf("region %v, live file %s offset 0x%x", r, m.name, m.offset)
			}
		case m.name == "[vdso]" || m.name == "[stack]" || m.name == "[vsyscall]":
			if r.FileName != m.name {
				t.Errorf("region %v should be %s", r, m.name)
			}
		}
	}
	if matched < len(live)/2 {
		t.Errorf("only %d of %d live mappings are in the core's map", matched, len(live))
	}
}

// checkAgainstGDB reads samples with gdb's `x` from the same core and
// compares them with what the Target reads: both must agree with the live
// bytes (checkMemory) and with each other.
func checkAgainstGDB(t *testing.T, proc *target.Context, exe, corePath string, samples []sample) {
	t.Helper()
	args := []string{"-ex", "set pagination off"}
	for _, s := range samples {
		args = append(args, "-ex", fmt.Sprintf("x/16xb 0x%x", s.addr))
	}
	out := gdbtest.Batch(t, append(args, exe, corePath)...)
	got := map[uint64][]byte{} // address of each line -> its bytes
	for _, l := range strings.Split(string(out), "\n") {
		head, rest, ok := strings.Cut(l, ":")
		if !ok || !strings.HasPrefix(head, "0x") {
			continue
		}
		a, err := strconv.ParseUint(strings.Fields(head)[0][2:], 16, 64)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(rest) {
			if v, err := strconv.ParseUint(strings.TrimPrefix(f, "0x"), 16, 8); err == nil {
				got[a] = append(got[a], byte(v))
			}
		}
	}
	compared := 0
	for _, s := range samples {
		g := append(append([]byte(nil), got[s.addr]...), got[s.addr+8]...)
		if len(g) != 16 {
			continue // gdb could not read it either
		}
		compared++
		buf := make([]byte, 16)
		if _, err := proc.ReadMemory(s.addr, buf); err != nil || !bytes.Equal(buf, g) {
			t.Errorf("0x%x (%s): sonde %x (%v), gdb x %x", s.addr, s.kind, buf, err, g)
		}
	}
	if compared < len(samples)*9/10 {
		t.Errorf("gdb read only %d of %d samples", compared, len(samples))
	}
	t.Logf("%d addresses agree with gdb's x", compared)
}
