package unwind

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"testing"
)

// walkFresh is the reference: a walk by an Unwinder that keeps no record.
func walkFresh(s *snapshot, lookup LookupIP, opts Options, regs *Registers) ([]Frame, StopReason, string) {
	opts.ReuseFrames = false
	u := New(s, lookup, &opts)
	u.InitRegisters(regs)
	frames, stop := u.Walk(nil)
	return frames, stop, fmt.Sprint(u.Err())
}

// restWalks counts checkSame's walks.
var restWalks int

// checkSame walks with u (which may replay its last walk) and fails unless
// the result is the fresh walk's, frame for frame. It returns the frames
// reused.
func checkSame(t testing.TB, what string, u *Unwinder, s *snapshot, lookup LookupIP, regs *Registers) int {
	t.Helper()
	want, wantStop, wantErr := walkFresh(s, lookup, u.opts, regs)
	u.InitRegisters(regs)
	// Every other walk takes its replayed frames with ReplayRest, which
	// must leave the same walk and the same record as Step's.
	restWalks++
	got, stop, err := func() ([]Frame, StopReason, string) {
		if restWalks%2 == 0 {
			f, st := u.Walk(nil)
			return f, st, fmt.Sprint(u.Err())
		}
		var f []Frame
		for {
			f = append(f, *u.Frame())
			if rest := u.ReplayRest(); rest != nil {
				f = append(f, rest...)
				break
			}
			if !u.Step() {
				break
			}
		}
		return f, u.StopReason(), fmt.Sprint(u.Err())
	}()
	if len(got) != len(want) || stop != wantStop || err != wantErr {
		t.Fatalf("%s: %d frames (%v, %s), fresh walk %d (%v, %s); %d reused", what, len(got), stop, err, len(want), wantStop, wantErr, u.Reused())
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: frame %d\n got %+v\nwant %+v", what, i, got[i], want[i])
		}
	}
	return u.Reused()
}

// TestReuseFrames walks a real 300-deep stack again and again, changing
// what a walk depends on in between: each walk must be the fresh walk's,
// and unchanged frames must be reused.
func TestReuseFrames(t *testing.T) {
	bin := buildCase(t, liveCase{name: "deep", flags: []string{"-O1", "-fomit-frame-pointer"}})
	lt := startLive(t, bin, "recurse", "300")
	s := lt.snapshot(lt.pid)
	regs := s.regs
	u := New(s, s, &Options{ReuseFrames: true})
	n := checkSame(t, "first walk", u, s, s, &regs)
	if n != 0 {
		t.Fatalf("first walk reused %d frames", n)
	}
	u.InitRegisters(&regs)
	good, _ := u.Walk(nil)
	if len(good) < 300 {
		t.Fatalf("%d frames", len(good))
	}
	if n := checkSame(t, "same stop", u, s, s, &regs); n != len(good)-1 {
		t.Errorf("same stop: %d frames reused, want all but frame 0 (%d)", n, len(good)-1)
	}

	// A changed return address: the frames up to it are the same, the walk
	// then ends there; restored, everything is reused again.
	for _, k := range []int{1, 2, 100, len(good) - 2} {
		slot := good[k-1].CFA - 8
		var orig, v [8]byte
		s.ReadMemory(orig[:], slot)
		for _, bad := range []uint64{0, 0x4141414141414141, good[k+1].PC} {
			binary.LittleEndian.PutUint64(v[:], bad)
			s.write(slot, v[:])
			if n := checkSame(t, fmt.Sprintf("return address of frame %d = %#x", k, bad), u, s, s, &regs); n >= len(good)-k {
				t.Errorf("return address of frame %d changed: %d frames reused", k, n)
			}
		}
		s.write(slot, orig[:])
		checkSame(t, fmt.Sprintf("return address of frame %d restored", k), u, s, s, &regs)
	}
	if n := checkSame(t, "all restored", u, s, s, &regs); n != len(good)-1 {
		t.Errorf("all restored: %d frames reused, want %d", n, len(good)-1)
	}

	// Other registers at the stop: a callee-saved one reaches the outer
	// frames unless a frame saved it; a caller-saved one does not matter.
	for _, r := range []int{regRBX, 0 /* rax */, regR12} {
		changed := regs
		v, _ := changed.Get(r)
		changed.Set(r, v^0x5a5a)
		checkSame(t, fmt.Sprintf("register %d changed", r), u, s, s, &changed)
		checkSame(t, fmt.Sprintf("register %d restored", r), u, s, s, &regs)
	}

	// Stopped one frame further out (frame 1 as frame 0): the depth of the
	// reused frames moves.
	out := good[1].Regs
	out.Set(regRIP, good[1].PC)
	out.Set(regRSP, good[1].SP)
	if n := checkSame(t, "one frame out", u, s, s, &out); n == 0 {
		t.Errorf("one frame out: nothing reused")
	}
	checkSame(t, "back in", u, s, s, &regs)

	// A walk that ends in an error, replayed at another depth: the error
	// tells the depth of this walk.
	slot := good[150].CFA - 8
	var orig, v [8]byte
	s.ReadMemory(orig[:], slot)
	binary.LittleEndian.PutUint64(v[:], 0x4141414141414141)
	s.write(slot, v[:])
	checkSame(t, "damaged", u, s, s, &regs)
	if n := checkSame(t, "damaged, one frame out", u, s, s, &out); n == 0 || u.Err() == nil {
		t.Errorf("damaged, one frame out: %d reused, error %v", n, u.Err())
	}
	s.write(slot, orig[:])

	// A depth limit: a walk cut by it is reused only at the same depth.
	lim := New(s, s, &Options{ReuseFrames: true, MaxDepth: 100})
	checkSame(t, "limited", lim, s, s, &regs)
	if n := checkSame(t, "limited again", lim, s, s, &regs); n != 99 {
		t.Errorf("limited again: %d reused, want 99", n)
	}
	checkSame(t, "limited, one frame out", lim, s, s, &out)

	// Forget: nothing reused.
	u.Forget()
	if n := checkSame(t, "after Forget", u, s, s, &regs); n != 0 {
		t.Errorf("after Forget: %d reused", n)
	}
}

// TestReuseFramesBounded: a stack deeper than a record may hold is walked
// afresh every time, and right.
func TestReuseFramesBounded(t *testing.T) {
	bin := buildCase(t, liveCase{name: "deep", flags: []string{"-O1", "-fomit-frame-pointer"}})
	lt := startLive(t, bin, "recurse", "1100")
	s := lt.snapshot(lt.pid)
	u := New(s, s, &Options{ReuseFrames: true})
	checkSame(t, "first", u, s, s, &s.regs)
	if n := checkSame(t, "again", u, s, s, &s.regs); n != 0 {
		t.Errorf("%d frames reused from a walk of more than %d", n, maxRecordedFrames)
	}
}

// TestReuseNeedsSameFrameBelow: a recorded frame is taken up only after a
// frame with the CFA of the one recorded below it (prepare's check of the
// CFAs would otherwise see another frame below). With CFI the caller's sp
// is the callee's CFA, so matching frames always have it; the frame-pointer
// and signal methods need not.
func TestReuseNeedsSameFrameBelow(t *testing.T) {
	u := New(&snapshot{moduleSet: &moduleSet{}}, nil, &Options{ReuseFrames: true})
	rec := &u.last
	rec.frames = []Frame{{PC: 0x1000, SP: 0x100, CFA: 0x200, Exact: true}, {PC: 0x2000, SP: 0x200, CFA: 0x300}, {PC: 0x3000, SP: 0x300, CFA: 0x400}}
	rec.stepStart = []int32{0, 0, 0, 0}
	rec.complete, rec.stop = true, StopOutermost
	for _, tc := range []struct {
		cfa    uint64
		replay bool
	}{{0x200, true}, {0x1f0, false}, {0x300, false}} {
		u.replay, u.noReuseBelow = -1, 0
		u.frame = Frame{PC: 0x1010, SP: 0xf0, CFA: tc.cfa, Exact: true}
		u.next = Frame{PC: 0x2000, SP: 0x200}
		u.tryReuse()
		if (u.replay >= 0) != tc.replay {
			t.Errorf("frame below with CFA %#x: replay %d", tc.cfa, u.replay)
		}
	}
}

// TestReuseFramesBacktrace: a replayed Backtrace has the symbols and inline
// frames of a fresh one.
func TestReuseFramesBacktrace(t *testing.T) {
	bin := buildCase(t, liveCase{name: "deep", flags: []string{"-O1", "-fomit-frame-pointer"}})
	lt := startLive(t, bin, "recurse", "50")
	s := lt.snapshot(lt.pid)
	lookup := &inlineLookup{moduleSet: s.moduleSet, outer: "recurse"}
	fresh := New(s, lookup, nil)
	fresh.Init()
	want := fresh.Backtrace(BacktraceOptions{})
	// Stops in frame 0, then one frame further out, then in frame 0 again
	// (frame 0 changes, the rest is replayed).
	// at 10 and 11 (two frames of the recursion: the same pc, another
	// stack pointer).
	at := func(k int) *Registers {
		w := New(s, lookup, nil)
		w.Init()
		for range k {
			w.Step()
		}
		r := w.Frame().Regs
		r.Set(regRIP, w.Frame().PC)
		r.Set(regRSP, w.Frame().SP)
		return &r
	}
	outRegs := *at(1)
	at10, at11 := at(10), at(11)
	if at10.Values[regRIP] != at11.Values[regRIP] {
		t.Fatalf("frames 10 and 11 at %#x and %#x, want the same pc", at10.Values[regRIP], at11.Values[regRIP])
	}
	u := New(s, lookup, &Options{ReuseFrames: true})
	for round, regs := range []*Registers{&s.regs, &s.regs, &outRegs, &s.regs, &outRegs, &outRegs, at10, at11, at10} {
		fresh.InitRegisters(regs)
		want := fresh.Backtrace(BacktraceOptions{})
		u.InitRegisters(regs)
		got := u.Backtrace(BacktraceOptions{})
		if len(got.Frames) != len(want.Frames) || got.Stop != want.Stop {
			t.Fatalf("round %d: %d frames (%v), want %d (%v)", round, len(got.Frames), got.Stop, len(want.Frames), want.Stop)
		}
		for i := range got.Frames {
			if got.Frames[i] != want.Frames[i] {
				t.Fatalf("round %d, frame %d:\n got %+v\nwant %+v", round, i, got.Frames[i], want.Frames[i])
			}
		}
		if round > 0 && u.Reused() == 0 {
			t.Errorf("round %d: nothing reused", round)
		}
		// The caller may scribble on its trace: the record is a copy.
		for i := range got.Frames {
			got.Frames[i] = StackFrame{}
		}
	}
	// With other options, symbols are asked for again.
	u.Init()
	got := u.Backtrace(BacktraceOptions{NoInline: true})
	fresh.Init()
	want = fresh.Backtrace(BacktraceOptions{NoInline: true})
	if len(got.Frames) != len(want.Frames) {
		t.Fatalf("NoInline: %d frames, want %d", len(got.Frames), len(want.Frames))
	}
	for i := range got.Frames {
		if got.Frames[i] != want.Frames[i] {
			t.Fatalf("NoInline, frame %d:\n got %+v\nwant %+v", i, got.Frames[i], want.Frames[i])
		}
	}
}

// TestReuseFramesGarbage: hostile stacks, changed a few words at a time
// between walks; every walk must be the fresh walk's.
func TestReuseFramesGarbage(t *testing.T) {
	w := newGarbageWorld(t)
	r := rand.New(rand.NewSource(7))
	reused := 0
	for iter := 0; iter < 300; iter++ {
		stack := w.plausibleStack(r)
		s := w.snapshotOf(stack)
		var regs Registers
		regs.Set(regRIP, w.pcs[r.Intn(len(w.pcs))])
		regs.Set(regRSP, garbageStack+uint64(r.Intn(len(stack)/2))&^7)
		regs.Set(regRBP, garbageStack+uint64(r.Intn(len(stack)))&^7)
		u := New(s, s, &Options{ReuseFrames: true, MaxDepth: 256})
		for step := 0; step < 6; step++ {
			reused += checkSame(t, fmt.Sprintf("stack %d, change %d", iter, step), u, s, s, &regs)
			for range 1 + r.Intn(3) {
				off := r.Intn(len(stack)/8) * 8
				binary.LittleEndian.PutUint64(stack[off:], w.plausibleWord(r, len(stack)))
			}
			if r.Intn(4) == 0 {
				regs.Set(regRBP, garbageStack+uint64(r.Intn(len(stack)))&^7)
			}
		}
	}
	t.Logf("%d frames reused", reused)
	if reused == 0 {
		t.Errorf("no frame reused in any walk")
	}
}

// FuzzReuseFrames: a stack, a walk, one word changed, a second walk that
// may replay the first: it must be the fresh walk's.
func FuzzReuseFrames(f *testing.F) {
	w := newGarbageWorld(f)
	r := rand.New(rand.NewSource(1))
	f.Add(w.plausibleStack(r)[:512], w.pcs[0], uint64(16), uint64(64), uint16(3), w.pcs[1])
	f.Add(make([]byte, 64), w.pcs[len(w.pcs)/2], uint64(0), uint64(8), uint16(0), uint64(0))
	f.Fuzz(func(t *testing.T, stack []byte, rip, spOff, bpOff uint64, slot uint16, v uint64) {
		s := w.snapshotOf(stack)
		var regs Registers
		regs.Set(regRIP, rip)
		regs.Set(regRSP, garbageStack+spOff%4096)
		regs.Set(regRBP, garbageStack+bpOff%4096)
		u := New(s, s, &Options{ReuseFrames: true, MaxDepth: 256})
		checkSame(t, "first", u, s, s, &regs)
		checkSame(t, "again", u, s, s, &regs)
		if off := int(slot) * 8; off+8 <= len(stack) {
			binary.LittleEndian.PutUint64(stack[off:], v)
		}
		checkSame(t, "changed", u, s, s, &regs)
	})
}

// plausibleStack is 16 KB of words that are return addresses, stack
// addresses or noise.
func (w *garbageWorld) plausibleStack(r *rand.Rand) []byte {
	stack := make([]byte, 16<<10)
	for i := 0; i < len(stack); i += 8 {
		binary.LittleEndian.PutUint64(stack[i:], w.plausibleWord(r, len(stack)))
	}
	return stack
}

func (w *garbageWorld) plausibleWord(r *rand.Rand, size int) uint64 {
	switch r.Intn(4) {
	case 0:
		return r.Uint64()
	case 1:
		return w.pcs[r.Intn(len(w.pcs))]
	case 2:
		return garbageStack + uint64(r.Intn(size))&^7
	}
	return 0
}

// snapshotOf maps stack at garbageStack beside the world's code; later
// changes to stack show in the snapshot.
func (w *garbageWorld) snapshotOf(stack []byte) *snapshot {
	s := &snapshot{moduleSet: w.ms}
	s.regions = append([]region{}, w.text...)
	s.regions = append(s.regions, region{garbageStack, stack})
	sortRegions(s.regions)
	return s
}
