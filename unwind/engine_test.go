package unwind

import (
	"cmp"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/sondedbg/sonde/unwind/cfi"
)

// walkSnapshot unwinds a snapshot and returns its frames.
func walkSnapshot(t *testing.T, s *snapshot, lookup LookupIP) ([]Frame, StopReason, error) {
	t.Helper()
	u := New(s, lookup, nil)
	if err := u.Init(); err != nil {
		t.Fatal(err)
	}
	frames, stop := u.Walk(nil)
	return frames, stop, u.Err()
}

func pcsOf(frames []Frame) []uint64 {
	var pcs []uint64
	for _, f := range frames {
		pcs = append(pcs, f.PC)
	}
	return pcs
}

// clone copies a module's public fields (not the engine's caches).
func (m *Module) clone() *Module {
	return &Module{Name: m.Name, Start: m.Start, End: m.End, Bias: m.Bias, EHFrameHdr: m.EHFrameHdr,
		EHFrame: m.EHFrame, DebugFrame: m.DebugFrame, Client: m.Client}
}

// TestSignalFrameWithoutCFI hides the CFI of libc's __restore_rt: the engine
// must recognise the trampoline by its code and restore the interrupted
// frame from the ucontext, giving the same frames as with CFI.
func TestSignalFrameWithoutCFI(t *testing.T) {
	bin := buildCase(t, liveCase{name: "signal", flags: []string{"-O2"}})
	lt := startLive(t, bin, "signal")
	s := lt.snapshot(lt.pid)
	want, stop, _ := walkSnapshot(t, s, s)
	sig := slices.IndexFunc(want, func(f Frame) bool { return f.Kind == KindSignal })
	if sig < 0 || stop != StopOutermost || want[sig].Method != MethodCFI {
		t.Fatalf("reference walk: signal frame at %d, stop %v", sig, stop)
	}
	tramp := want[sig].PC
	// Split libc in three: the trampoline (and the nop before it, where a
	// caller's pc-1 lands) becomes a module without unwind sections.
	libc, _ := s.LookupModule(tramp)
	low, high := libc.clone(), libc.clone()
	low.End, high.Start = tramp-1, tramp+9
	hidden := &Module{Name: "no-cfi", Start: tramp - 1, End: tramp + 9, Bias: libc.Bias, Client: libc.Client}
	ms := &moduleSet{}
	for _, m := range s.modules {
		if m != libc {
			ms.modules = append(ms.modules, m)
		}
	}
	ms.modules = append(ms.modules, low, hidden, high)
	slices.SortFunc(ms.modules, func(a, b *Module) int { return cmp.Compare(a.Start, b.Start) })
	got, stop, err := walkSnapshot(t, s, ms)
	if !slices.Equal(pcsOf(got), pcsOf(want)) || stop != StopOutermost {
		t.Fatalf("without CFI: %x (%v, %v), want %x", pcsOf(got), stop, err, pcsOf(want))
	}
	if got[sig].Kind != KindSignal || got[sig].Method != MethodSignal || !got[sig+1].Exact {
		t.Errorf("trampoline frame %+v", got[sig])
	}
}

// TestFramePointerFallbackUsed checks that the no-CFI build really exercises
// the frame-pointer fallback, and that disabling it stops the walk there
// with StopNoUnwindInfo instead of guessing.
func TestFramePointerFallbackUsed(t *testing.T) {
	c := liveCase{name: "nocfi", flags: []string{"-O1", "-g0", "-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"}}
	lt := startLive(t, buildCase(t, c), "recurse", "3")
	s := lt.snapshot(lt.pid)
	frames, stop, _ := walkSnapshot(t, s, s)
	fp := 0
	for _, f := range frames {
		if f.Method == MethodFramePointer {
			fp++
		}
	}
	if fp < 4 || stop != StopOutermost {
		t.Errorf("%d frames by frame pointer, stop %v", fp, stop)
	}
	u := New(s, s, &Options{NoFramePointer: true})
	u.Init()
	short, stop := u.Walk(nil)
	if stop != StopNoUnwindInfo || len(short) >= len(frames) {
		t.Errorf("without the fallback: %d frames, %v", len(short), stop)
	}
}

// TestDebugFrameOnlyUsed checks the .debug_frame build has no .eh_frame FDE
// for the program's functions, so the live comparison really used .debug_frame.
func TestDebugFrameOnlyUsed(t *testing.T) {
	c := liveCase{name: "debugframe", flags: []string{"-O2", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"}}
	lt := startLive(t, buildCase(t, c), "recurse", "3")
	s := lt.snapshot(lt.pid)
	frames, _, _ := walkSnapshot(t, s, s)
	for _, f := range frames {
		if f.Module == nil || f.Module.Name != lt.cmd.Path {
			continue
		}
		st := f.Module.tables()
		lpc := f.LookupPC() - f.Module.Bias
		if st.eh != nil {
			if _, err := st.eh.FindFDE(lpc); err == nil {
				continue // crt code keeps its .eh_frame
			}
		}
		if st.debug == nil {
			t.Fatal("no .debug_frame")
		}
		if _, err := st.debug.FindFDE(lpc); err != nil {
			t.Errorf("pc %#x: %v", f.PC, err)
		}
		return
	}
	t.Error("no frame of the program was unwound with .debug_frame")
}

// inlineLookup pretends every frame of `outer` has `inner` inlined into it.
type inlineLookup struct {
	*moduleSet
	outer string
}

func (l *inlineLookup) SymbolInfo(m *Module, pc uint64) ([]Symbol, error) {
	syms, err := l.moduleSet.SymbolInfo(m, pc)
	if len(syms) == 1 && syms[0].Function == l.outer {
		return []Symbol{{Function: "inlined_into_" + l.outer, Line: 7}, syms[0]}, err
	}
	return syms, err
}

func TestInlineExpansion(t *testing.T) {
	lt := startLive(t, buildCase(t, liveCase{name: "O2", flags: []string{"-O2"}}), "recurse", "2")
	s := lt.snapshot(lt.pid)
	u := New(s, &inlineLookup{moduleSet: s.moduleSet, outer: "recurse"}, nil)
	u.Init()
	phys, _ := u.Walk(nil)
	u.Init()
	tr := u.Backtrace(BacktraceOptions{})
	if len(tr.Frames) != len(phys)+3 { // three recurse frames gain one inline frame each
		t.Fatalf("%d frames for %d physical", len(tr.Frames), len(phys))
	}
	for i, f := range tr.Frames {
		if f.Index != i {
			t.Errorf("frame %d has index %d", i, f.Index)
		}
		if f.Symbol.Function == "inlined_into_recurse" {
			next := tr.Frames[i+1]
			if f.Kind != KindInline || next.Symbol.Function != "recurse" || next.PC != f.PC || next.Physical != f.Physical ||
				next.Kind != KindNormal || f.LookupPC != f.PC-1 {
				t.Errorf("inline frame %d: %+v then %+v", i, f, next)
			}
		}
	}
	u.Init()
	if tr := u.Backtrace(BacktraceOptions{NoInline: true}); len(tr.Frames) != len(phys) {
		t.Errorf("NoInline: %d frames, want %d", len(tr.Frames), len(phys))
	}
}

// TestDRAPRealignmentUsesExpressions checks that the realign case really
// unwinds through a DWARF-expression CFA (GCC's DRAP) and expression rules.
func TestDRAPRealignmentUsesExpressions(t *testing.T) {
	lt := startLive(t, buildCase(t, liveCase{name: "realign", flags: []string{"-O2"}}), "realign", "3")
	s := lt.snapshot(lt.pid)
	frames, stop, err := walkSnapshot(t, s, s)
	if stop != StopOutermost {
		t.Fatalf("stop %v: %v", stop, err)
	}
	for _, f := range frames {
		syms, _ := s.SymbolInfo(f.Module, f.LookupPC())
		if len(syms) == 0 || syms[0].Function != "realigned" {
			continue
		}
		row, err := f.Module.row(f.LookupPC())
		if err != nil || row == nil {
			t.Fatalf("no row: %v", err)
		}
		if row.CFA.Kind != cfi.RuleCFAExpression || row.Regs[regRBP].Kind != cfi.RuleExpression {
			t.Errorf("realigned: CFA %v, rbp %v: not the DRAP shape", row.CFA, row.Regs[regRBP])
		}
		return
	}
	t.Error("no realigned frame")
}

// failingLookup reports an error for every pc in one range. Its modules say
// End 0 so that the engine asks for every pc instead of caching the range.
type failingLookup struct {
	*moduleSet
	lo, hi uint64
	mods   map[*Module]*Module
}

var errClient = errors.New("client cannot tell")

func (l *failingLookup) LookupModule(pc uint64) (*Module, error) {
	if pc >= l.lo && pc < l.hi {
		return nil, errClient
	}
	m, err := l.moduleSet.LookupModule(pc)
	if m == nil {
		return m, err
	}
	if l.mods[m] == nil {
		c := m.clone()
		c.End = 0
		l.mods[m] = c
	}
	return l.mods[m], nil
}

// TestLookupErrorStops: a lookup-ip error ends the walk with the error
// attached, rather than being taken for "no module".
func TestLookupErrorStops(t *testing.T) {
	lt := startLive(t, buildCase(t, liveCase{name: "O2", flags: []string{"-O2"}}), "recurse", "2")
	s := lt.snapshot(lt.pid)
	all, _, _ := walkSnapshot(t, s, s)
	main := all[len(all)-4] // main, __libc_start_call_main, __libc_start_main, _start
	u := New(s, &failingLookup{moduleSet: s.moduleSet, lo: main.PC - 1, hi: main.PC, mods: map[*Module]*Module{}}, nil)
	u.Init()
	frames, stop := u.Walk(nil)
	if stop != StopNoUnwindInfo || !errors.Is(u.Err(), errClient) || len(frames) != len(all)-3 {
		t.Errorf("%d frames, %v, %v", len(frames), stop, u.Err())
	}
}

// TestConcurrentWalks shares modules (and their row caches) between
// goroutines, each with its own Unwinder; run with -race.
func TestConcurrentWalks(t *testing.T) {
	lt := startLive(t, buildCase(t, liveCase{name: "deep", flags: []string{"-O1", "-fomit-frame-pointer"}}), "recurse", "300")
	s := lt.snapshot(lt.pid)
	want, _, _ := walkSnapshot(t, s, s)
	ms := &moduleSet{}
	for _, m := range s.modules {
		ms.modules = append(ms.modules, m.clone()) // cold caches, filled concurrently
	}
	s2 := &snapshot{moduleSet: ms, regs: s.regs, regions: s.regions}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := New(s2, s2, nil)
			for i := 0; i < 20; i++ {
				u.Init()
				got, _ := u.Walk(nil)
				if !slices.Equal(pcsOf(got), pcsOf(want)) {
					t.Error("concurrent walk differs")
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestDepthLimit(t *testing.T) {
	lt := startLive(t, buildCase(t, liveCase{name: "deep", flags: []string{"-O1", "-fomit-frame-pointer"}}), "recurse", "300")
	s := lt.snapshot(lt.pid)
	u := New(s, s, &Options{MaxDepth: 50})
	u.Init()
	frames, stop := u.Walk(nil)
	if len(frames) != 50 || stop != StopDepthLimit || u.StopReason() != StopDepthLimit {
		t.Errorf("%d frames, %v", len(frames), stop)
	}
	if last := frames[len(frames)-1]; last.CFA <= last.SP {
		t.Errorf("last frame's CFA not computed: %+v", last)
	}
}

// TestPushRBPOnlyAtEntry: in code without CFI, a push %rbp byte counts as a
// frame being set up only at the function's entry (from the client's symbol
// information), not in the middle of a function.
func TestPushRBPOnlyAtEntry(t *testing.T) {
	c := liveCase{name: "nocfi", flags: []string{"-O1", "-g0", "-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"}}
	bin := buildCase(t, c)
	ms, text := offlineModules(t, bin)
	m := ms.modules[0]
	st := m.Client.(*symtab)
	var entry, middle, ret uint64
	for _, sym := range st.syms {
		if sym.Name == "recurse" {
			entry = sym.Value + m.Bias
			ret = entry + sym.Size/2 // a plausible return address inside a function...
		}
	}
	// ...that follows a call, so that it validates as a return address.
	for _, r := range text {
		for i := 5; i < len(r.data); i++ {
			a := r.addr + uint64(i)
			if r.data[i-5] == 0xe8 && a > entry && a < entry+64 {
				ret = a
			}
			if r.data[i] == 0x55 && middle == 0 && a > entry+16 {
				if _, ok := st.lookup(a - m.Bias); ok && !isSymbolStart(st, a-m.Bias) {
					middle = a
				}
			}
		}
	}
	if entry == 0 || middle == 0 {
		t.Fatal("no push %rbp found")
	}
	stack := make([]byte, 64)
	binary.LittleEndian.PutUint64(stack, ret)
	for _, tc := range []struct {
		pc     uint64
		frames int
	}{{entry, 2}, {middle, 1}} {
		s := &snapshot{moduleSet: ms, regions: append(append([]region{}, text...), region{garbageStack, stack})}
		sortRegions(s.regions)
		s.regs.Set(regRIP, tc.pc)
		s.regs.Set(regRSP, garbageStack)
		s.regs.Set(regRBP, 0)
		u := New(s, s, &Options{MaxDepth: 2})
		u.Init()
		frames, stop := u.Walk(nil)
		if len(frames) != tc.frames {
			t.Errorf("pc %#x: %d frames (%v, %v), want %d", tc.pc, len(frames), stop, u.Err(), tc.frames)
		}
	}
}

func isSymbolStart(st *symtab, addr uint64) bool {
	for _, s := range st.syms {
		if s.Value == addr {
			return true
		}
	}
	return false
}
