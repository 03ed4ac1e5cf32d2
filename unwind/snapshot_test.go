package unwind

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// snapshot is an in-memory client, like a perf sample or a core: registers,
// copies of memory regions (the stack and the code), and the modules.
type snapshot struct {
	*moduleSet
	regs    Registers
	regions []region // sorted, disjoint
}

type region struct {
	addr uint64
	data []byte
}

func (s *snapshot) ReadMemory(buf []byte, addr uint64) (int, error) {
	i := sort.Search(len(s.regions), func(i int) bool { return s.regions[i].addr > addr }) - 1
	if i < 0 {
		return 0, nil
	}
	r := &s.regions[i]
	if addr-r.addr >= uint64(len(r.data)) {
		return 0, nil
	}
	return copy(buf, r.data[addr-r.addr:]), nil
}

func (s *snapshot) ReadRegister(reg int) (uint64, bool) { return s.regs.Get(reg) }

// snapshot copies a stopped thread: its registers, its whole stack mapping
// and every executable mapping.
func (lt *liveTarget) snapshot(tid int) *snapshot {
	th := lt.thread(tid)
	s := &snapshot{moduleSet: &lt.moduleSet}
	for r := 0; r < NumRegs; r++ {
		if v, ok := th.ReadRegister(r); ok {
			s.regs.Set(r, v)
		}
	}
	sp := th.regs.Rsp
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", lt.pid))
	if err != nil {
		lt.t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		rng := strings.SplitN(f[0], "-", 2)
		start, _ := strconv.ParseUint(rng[0], 16, 64)
		end, _ := strconv.ParseUint(rng[1], 16, 64)
		if !(sp >= start && sp < end) && !strings.Contains(f[1], "x") || len(f) > 5 && f[5] == "[vsyscall]" {
			continue
		}
		b := make([]byte, end-start)
		n, _ := lt.mem.ReadAt(b, int64(start))
		s.regions = append(s.regions, region{start, b[:n]})
	}
	sort.Slice(s.regions, func(i, j int) bool { return s.regions[i].addr < s.regions[j].addr })
	return s
}

// offlineModules maps ELF files at fixed addresses without a process, for
// tests that need real CFI but no target (garbage stacks, fuzzing).
func offlineModules(tb testing.TB, files ...string) (*moduleSet, []region) {
	ms := &moduleSet{}
	var text []region
	base := uint64(0x10000000)
	for _, name := range files {
		ef, err := elf.Open(name)
		if err != nil {
			tb.Fatal(err)
		}
		var lo, hi uint64 = ^uint64(0), 0
		for _, p := range ef.Progs {
			if p.Type == elf.PT_LOAD {
				lo, hi = min(lo, p.Vaddr), max(hi, p.Vaddr+p.Memsz)
			}
		}
		bias := base - lo
		if ef.Type == elf.ET_EXEC {
			bias = 0
		}
		m := &Module{Name: name, Start: lo + bias, End: hi + bias, Bias: bias}
		src, err := ReadSources(ef)
		if err != nil {
			tb.Fatal(err)
		}
		m.SetSources(src)
		m.Client = readSymtab(ef)
		for _, p := range ef.Progs {
			if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
				b := make([]byte, p.Filesz)
				p.ReadAt(b, 0)
				text = append(text, region{p.Vaddr + bias, b})
			}
		}
		ef.Close()
		ms.modules = append(ms.modules, m)
		base = (hi + bias + 0x1000000) &^ 0xfff
	}
	sort.Slice(ms.modules, func(i, j int) bool { return ms.modules[i].Start < ms.modules[j].Start })
	return ms, text
}

// TestSnapshotMatchesLive unwinds a copy of a stopped thread and expects the
// same frames as the live walk (what core files and perf samples rely on).
func TestSnapshotMatchesLive(t *testing.T) {
	bin := buildCase(t, liveCase{name: "deep", flags: []string{"-O1", "-fomit-frame-pointer"}})
	lt := startLive(t, bin, "recurse", "300")
	live, _ := lt.walk(lt.pid)
	s := lt.snapshot(lt.pid)
	u := New(s, s, nil)
	if err := u.Init(); err != nil {
		t.Fatal(err)
	}
	frames, stop := u.Walk(nil)
	if stop != StopOutermost || len(frames) != len(live) || len(live) < 300 {
		t.Fatalf("snapshot: %d frames (%v), live %d", len(frames), stop, len(live))
	}
	for i := range frames {
		if frames[i].PC != live[i].pc {
			t.Fatalf("frame %d: snapshot %#x, live %#x", i, frames[i].PC, live[i].pc)
		}
	}
}
