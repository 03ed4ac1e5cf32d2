package unwind

import (
	"encoding/binary"
	"math/rand"
	"testing"
)

const garbageStack = 0x7ff000000000

// garbageWorld is real modules (a test program and libc, with their CFI and
// code) and a stack of hostile bytes.
type garbageWorld struct {
	ms   *moduleSet
	text []region
	pcs  []uint64 // addresses inside functions, to plant as fake return addresses
}

func newGarbageWorld(tb testing.TB) *garbageWorld {
	bin := buildCaseTB(tb, liveCase{name: "O2", flags: []string{"-O2"}})
	ms, text := offlineModules(tb, bin, "/lib/x86_64-linux-gnu/libc.so.6")
	w := &garbageWorld{ms: ms, text: text}
	for _, m := range ms.modules {
		for _, s := range m.Client.(*symtab).syms {
			w.pcs = append(w.pcs, s.Value+m.Bias+s.Size/2)
		}
	}
	return w
}

// walk unwinds stack (mapped at garbageStack) from the given registers and
// checks the engine's promises: it ends, with a reason, within MaxDepth, and
// CFAs increase except around signal frames.
func (w *garbageWorld) walk(t testing.TB, stack []byte, rip, rsp, rbp uint64) StopReason {
	s := &snapshot{moduleSet: w.ms}
	s.regions = append([]region{}, w.text...)
	s.regions = append(s.regions, region{garbageStack, stack})
	sortRegions(s.regions)
	s.regs.Set(regRIP, rip)
	s.regs.Set(regRSP, rsp)
	s.regs.Set(regRBP, rbp)
	u := New(s, s, &Options{MaxDepth: 256})
	u.Init()
	frames, stop := u.Walk(nil)
	if stop == StopNone {
		t.Fatalf("walk ended without a stop reason")
	}
	if len(frames) > 256 {
		t.Fatalf("%d frames, more than MaxDepth", len(frames))
	}
	for i := 1; i < len(frames)-1; i++ {
		a, b := &frames[i-1], &frames[i]
		if a.Kind != KindSignal && b.Kind != KindSignal && b.CFA != 0 && b.CFA <= a.CFA {
			t.Fatalf("frame %d: CFA %#x not above %#x", i, b.CFA, a.CFA)
		}
	}
	return stop
}

func sortRegions(r []region) {
	for i := 1; i < len(r); i++ {
		for j := i; j > 0 && r[j].addr < r[j-1].addr; j-- {
			r[j], r[j-1] = r[j-1], r[j]
		}
	}
}

// TestGarbageStacks: random stacks seeded with plausible return addresses and
// stack pointers; every walk must end with a stop reason.
func TestGarbageStacks(t *testing.T) {
	w := newGarbageWorld(t)
	r := rand.New(rand.NewSource(42))
	stops := map[StopReason]int{}
	for iter := 0; iter < 2000; iter++ {
		stack := make([]byte, 16<<10)
		for i := 0; i < len(stack); i += 8 {
			var v uint64
			switch r.Intn(4) {
			case 0:
				v = r.Uint64()
			case 1:
				v = w.pcs[r.Intn(len(w.pcs))]
			case 2:
				v = garbageStack + uint64(r.Intn(len(stack)))&^7
			}
			binary.LittleEndian.PutUint64(stack[i:], v)
		}
		rip := w.pcs[r.Intn(len(w.pcs))]
		if r.Intn(8) == 0 {
			rip = r.Uint64()
		}
		rsp := garbageStack + uint64(r.Intn(len(stack)/2))&^7
		rbp := garbageStack + uint64(r.Intn(len(stack)))&^7
		stops[w.walk(t, stack, rip, rsp, rbp)]++
	}
	t.Logf("stop reasons: %v", stops)
	// A stack pointer into unmapped memory is reported as such.
	if got := w.walk(t, nil, w.pcs[0], 0xdead0000, 0); got != StopMemoryUnreadable {
		t.Errorf("sp in unmapped memory: %v", got)
	}
}

// TestCorruptReturnAddress overwrites one return address of a real 300-deep
// stack: the walk must agree with the intact one up to the damage and then
// stop with a reason instead of inventing frames.
func TestCorruptReturnAddress(t *testing.T) {
	bin := buildCase(t, liveCase{name: "deep", flags: []string{"-O1", "-fomit-frame-pointer"}})
	lt := startLive(t, bin, "recurse", "300")
	s := lt.snapshot(lt.pid)
	u := New(s, s, nil)
	u.Init()
	good, _ := u.Walk(nil)
	for _, bad := range []uint64{0, 0x4141414141414141, s.regs.Values[regRSP], 1 << 47} {
		// Frame 100's return address lives just below frame 99's CFA.
		slot := good[99].CFA - 8
		var orig [8]byte
		s.ReadMemory(orig[:], slot)
		var v [8]byte
		binary.LittleEndian.PutUint64(v[:], bad)
		s.write(slot, v[:])
		u.Init()
		frames, stop := u.Walk(nil)
		s.write(slot, orig[:])
		if len(frames) < 100 || len(frames) > 110 {
			t.Errorf("return address %#x: %d frames (%v), want the walk to end near frame 100", bad, len(frames), stop)
		}
		for i := 0; i < 100 && i < len(frames); i++ {
			if frames[i].PC != good[i].PC {
				t.Fatalf("frame %d changed: %#x vs %#x", i, frames[i].PC, good[i].PC)
			}
		}
		if stop == StopNone || stop == StopDepthLimit {
			t.Errorf("return address %#x: stop %v", bad, stop)
		}
		t.Logf("return address %#x: %d frames, %v (%v)", bad, len(frames), stop, u.Err())
	}
}

func (s *snapshot) write(addr uint64, b []byte) {
	for i := range s.regions {
		r := &s.regions[i]
		if addr >= r.addr && addr+uint64(len(b)) <= r.addr+uint64(len(r.data)) {
			copy(r.data[addr-r.addr:], b)
			return
		}
	}
	panic("write outside snapshot")
}

// FuzzUnwindGarbage: arbitrary stack bytes and registers over real CFI.
func FuzzUnwindGarbage(f *testing.F) {
	w := newGarbageWorld(f)
	f.Add(make([]byte, 64), w.pcs[0], uint64(garbageStack), uint64(garbageStack+8))
	f.Add([]byte{1, 2, 3}, w.pcs[len(w.pcs)/2], uint64(garbageStack+16), uint64(0))
	f.Fuzz(func(t *testing.T, stack []byte, rip, rsp, rbp uint64) {
		w.walk(t, stack, rip, rsp, rbp)
	})
}
