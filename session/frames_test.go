package session

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/unwind"
	"github.com/sondedbg/sonde/unwind/cfi"
	"github.com/sondedbg/sonde/variables"
)

// TestStackIsTheBacktracesWalk: the frames with registers that StackOf
// gives for a backtrace are those of the walk that made it (no second
// walk), every backtrace frame has its physical frame, and each caller's
// registers are what the unwinder recovered: its pc in rip, its CFA the
// inner frame's rule applied to the inner frame's registers.
func TestStackIsTheBacktracesWalk(t *testing.T) {
	_, pid := deepTarget(t)
	s := liveSession(t, pid)
	th := mainThread(t, s)
	tr, err := s.Backtrace(th, StackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tu := threadExt.Get(th)
	reads := tu.cb.reads
	st, err := s.StackOf(th, tr)
	if err != nil {
		t.Fatal(err)
	}
	if tu.cb.reads != reads || tu.lastTrace.Frames == nil || &tu.lastTrace.Frames[0] != &tr.Frames[0] {
		t.Errorf("StackOf read the target again (%d reads, %d before)", tu.cb.reads, reads)
	}
	again, _ := s.StackOf(th, unwind.Trace{Frames: tr.Frames[:len(tr.Frames)/2]})
	if again != st {
		t.Error("StackOf of the backtrace's first half walked again")
	}
	if st.Len() < 300 {
		t.Fatalf("%d physical frames", st.Len())
	}
	for i, sf := range tr.Frames {
		f := st.FrameOf(i)
		if f == nil || f.Index() != sf.Physical || (sf.Kind != unwind.KindTailCall && f.PC() != sf.PC) {
			t.Fatalf("backtrace frame %d (physical %d, pc %#x): frame %v", i, sf.Physical, sf.PC, f)
		}
	}
	checked := 0
	for i := 0; i+1 < st.Len(); i++ {
		f, caller := st.Frame(i), st.Frame(i+1)
		rip, err := caller.Register(arch.DwarfRIP)
		if err != nil || leUint(rip) != caller.PC() {
			t.Errorf("frame %d: rip %x %v, pc %#x", i+1, rip, err, caller.PC())
		}
		if f.Unwound().Method != unwind.MethodCFI {
			continue
		}
		rule, err := s.FrameRule(th, f.lookupPC())
		if err != nil || rule == nil {
			t.Fatalf("frame %d at %#x: no rule: %v", i, f.PC(), err)
		}
		if rule.Row.Start > f.lookupPC() || f.lookupPC() >= rule.Row.End || rule.Module != f.Module() {
			t.Errorf("frame %d at %#x: rule for [%#x, %#x) of %v", i, f.PC(), rule.Row.Start, rule.Row.End, rule.Module)
		}
		if rule.Row.CFA.Kind != cfi.RuleCFARegOffset {
			continue
		}
		reg, err := f.Register(int(rule.Row.CFA.Reg))
		if err != nil {
			t.Fatalf("frame %d: register %d: %v", i, rule.Row.CFA.Reg, err)
		}
		cfa, _ := f.CFA()
		if got := leUint(reg) + uint64(rule.Row.CFA.Offset); got != cfa {
			t.Errorf("frame %d: rule %v gives CFA %#x, the walk %#x", i, rule.Row.CFA, got, cfa)
		}
		checked++
	}
	if checked < 300 {
		t.Errorf("%d frames checked against their CFI rule", checked)
	}
	// The same stop again: the unwinder replays its last walk, registers
	// included.
	tr2, err := s.Backtrace(th, StackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st2, err := s.StackOf(th, tr2)
	if err != nil || st2 == st || st2.Len() != st.Len() {
		t.Fatalf("again: %v, same Stack %v", err, st2 == st)
	}
	for i := 0; i < st.Len(); i++ {
		if a, b := st.Frame(i).Unwound(), st2.Frame(i).Unwound(); a != b {
			t.Fatalf("frame %d: first walk %+v, replayed %+v", i, a, b)
		}
	}
}

// TestFrameVariablesFromTheWalk reads deep(n)'s argument in each of 301
// frames of an -O0 build (n on the stack, found through each frame's
// recovered rbp): the innermost is deep(0).
func TestFrameVariablesFromTheWalk(t *testing.T) {
	_, pid := startDeep(t, []string{"-O0", "-g"}, "stk-deep-O0")
	s := liveSession(t, pid)
	st, err := s.Stack(mainThread(t, s), StackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr := st.Trace()
	vars := st.FrameVariables(-1, FrameVarsOptions{})
	seen := 0
	for i, sf := range tr.Frames {
		if sf.Symbol.Function != "deep" || len(vars[i].Args) != 1 {
			continue
		}
		if want := strconv.Itoa(seen); vars[i].Args[0].Value != want {
			t.Errorf("frame %d: deep(%s), want deep(%s)", i, vars[i].Args[0].Value, want)
		}
		seen++
	}
	if seen != 301 {
		t.Errorf("%d deep frames with their argument, want 301", seen)
	}
}

// TestProgramAddresses compares main's and the entry point's run-time
// addresses, and the libraries' link-map names, with gdb's.
func TestProgramAddresses(t *testing.T) {
	gdbtest.Need(t)
	_, pid := deepTarget(t)
	out := []byte(gdbtest.Batch(t, "-p", strconv.Itoa(pid),
		"-ex", "p/x (long)&main", "-ex", "info files", "-ex", "info sharedlibrary"))
	wantMain := regexp.MustCompile(`\$1 = (0x[0-9a-f]+)`).FindSubmatch(out)
	wantEntry := regexp.MustCompile(`Entry point: (0x[0-9a-f]+)`).FindSubmatch(out)
	if wantMain == nil || wantEntry == nil {
		t.Fatalf("gdb said:\n%s", out)
	}
	s := liveSession(t, pid)
	proc := mainThread(t, s).Process()
	if got, err := s.MainAddress(proc); err != nil || "0x"+strconv.FormatUint(got, 16) != string(wantMain[1]) {
		t.Errorf("MainAddress = %#x %v, gdb %s", got, err, wantMain[1])
	}
	if got, err := s.EntryAddress(proc); err != nil || "0x"+strconv.FormatUint(got, 16) != string(wantEntry[1]) {
		t.Errorf("EntryAddress = %#x %v, gdb %s", got, err, wantEntry[1])
	}
	rd, err := s.Loader(proc)
	if err != nil || rd == nil || rd.State != 0 {
		t.Fatalf("Loader: %+v %v", rd, err)
	}
	if m := s.mustModules(t, proc).ForAddress(rd.Brk); m == nil || !m.Interpreter {
		t.Errorf("r_brk %#x is not in the dynamic linker (%v)", rd.Brk, m)
	}
	names := s.LoadedNames(proc)
	if len(names) == 0 {
		t.Fatal("no link-map names")
	}
	for m, name := range names {
		if !regexp.MustCompile(`(?m)^0x[0-9a-f]+ +0x[0-9a-f]+ +Yes.*? ` + regexp.QuoteMeta(name) + `$`).Match(out) {
			t.Errorf("%s: link-map name %s is not in gdb's info sharedlibrary:\n%s", m.Name, name, out)
		}
		a, errA := os.Stat(name)
		b, errB := os.Stat(m.Path)
		if errA != nil || errB != nil || !os.SameFile(a, b) {
			t.Errorf("%s: link-map name %s is another file", m.Path, name)
		}
	}
}

// TestSymbolAt names frame 0's pc (in libc's pause) and deep's entry.
func TestSymbolAt(t *testing.T) {
	_, pid := deepTarget(t)
	s := liveSession(t, pid)
	th := mainThread(t, s)
	st, err := s.Stack(th, StackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, sf := range st.Trace().Frames {
		if sf.Symbol.Function != "deep" || sf.Symbol.FuncStart == 0 {
			continue
		}
		name, off, ok := s.SymbolAt(th, sf.Symbol.FuncStart+1)
		if !ok || name != "deep" || off != 1 {
			t.Errorf("frame %d: SymbolAt(deep+1) = %s+%d %v", i, name, off, ok)
		}
		return
	}
	t.Error("no frame in deep")
}

func (s *Session) mustModules(t *testing.T, proc *target.Context) ModuleList {
	t.Helper()
	mods, err := s.Modules(proc)
	if err != nil {
		t.Fatal(err)
	}
	return mods
}

var (
	_ variables.Frame       = (*Frame)(nil)
	_ variables.Writer      = (*Frame)(nil)
	_ variables.TLSFrame    = (*Frame)(nil)
	_ variables.SymbolFrame = (*Frame)(nil)
	_ variables.EntryCacher = (*Frame)(nil)
)

func leUint(b []byte) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// TestProcessSymbolsAgreeWithStack: the memory-map-only symbolizer names
// every frame of a backtrace as the session's unwinder did.
func TestProcessSymbolsAgreeWithStack(t *testing.T) {
	_, pid := deepTarget(t)
	s := liveSession(t, pid)
	st, err := s.Stack(mainThread(t, s), StackOptions{NoInline: true, NoTailCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := OpenProcessSymbols(pid, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	compared := 0
	for i, f := range st.Trace().Frames {
		if !f.HasSymbol || f.Module == nil || f.Kind != unwind.KindNormal {
			continue
		}
		frames, loc, err := ps.AppendFrames(nil, f.LookupPC)
		if err != nil || len(frames) == 0 || loc.Binary == nil {
			t.Fatalf("frame %d at %#x: %v %+v", i, f.LookupPC, err, loc)
		}
		if got := frames[len(frames)-1]; got.Function != f.Symbol.Function || got.Start != f.Symbol.FuncStart || loc.Module != f.Module.Name {
			t.Errorf("frame %d at %#x: %s (%#x) in %s, the stack has %s (%#x) in %s", i, f.LookupPC,
				got.Function, got.Start, loc.Module, f.Symbol.Function, f.Symbol.FuncStart, f.Module.Name)
		}
		compared++
	}
	if compared < 300 {
		t.Errorf("%d frames compared", compared)
	}
}
