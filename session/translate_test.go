package session

import (
	"debug/elf"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/ptrace"
	"github.com/sondedbg/sonde/unwind"
)

// TestBacktraceAtDisplacedFault: a load that faults while it is stepped
// displaced (a breakpoint on it) stops the thread inside sonde's scratch slot;
// the stop is translated, so the backtrace there equals the one of an
// uninstrumented run stopped by the same fault (ASLR off: same addresses).
func TestBacktraceAtDisplacedFault(t *testing.T) {
	path := testprog.Build(t, testprog.Spec{Sources: []string{"tp_dstep.c"}, Flags: []string{"-O2"}})
	withBP := faultBacktrace(t, path, true)
	without := faultBacktrace(t, path, false)
	if len(withBP.Frames) < 2 || len(withBP.Frames) != len(without.Frames) {
		t.Fatalf("%d frames with the breakpoint, %d without", len(withBP.Frames), len(without.Frames))
	}
	for i := range withBP.Frames {
		a, b := withBP.Frames[i], without.Frames[i]
		if a.PC != b.PC || a.SP != b.SP || a.Symbol.Function != b.Symbol.Function {
			t.Errorf("#%d: %#x sp %#x %s, uninstrumented %#x sp %#x %s", i, a.PC, a.SP, a.Symbol.Function, b.PC, b.SP, b.Symbol.Function)
		}
	}
	t.Logf("%d frames equal, from %s at %#x", len(withBP.Frames), withBP.Frames[0].Symbol.Function, withBP.Frames[0].PC)
	if withBP.Frames[0].Symbol.Function != "faulty_load" || withBP.Frames[1].Symbol.Function != "main" {
		t.Errorf("frames %s, %s", withBP.Frames[0].Symbol.Function, withBP.Frames[1].Symbol.Function)
	}
}

// faultBacktrace runs tp_dstep fault to its SIGSEGV stop, with or without a
// breakpoint (passed by an eventpoint, so stepped displaced) on faulty_load.
func faultBacktrace(t *testing.T, path string, bp bool) unwind.Trace {
	t.Helper()
	tg, err := ptrace.New()
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	stops := make(chan target.Event, 16)
	tg.AddListener(func(e target.Event) {
		if e.Kind == target.EventStopped {
			stops <- e
		}
	})
	p, _, err := tg.Launch(target.LaunchOptions{Path: path, Argv: []string{path, "fault"}, StopAtEntry: true, Stdio: target.StdioNull, DisableASLR: true})
	if err != nil {
		t.Fatal(err)
	}
	defer testprog.OpenProc(t, p.PID()).Kill()
	next := func(what string) target.Event {
		select {
		case e := <-stops:
			return e
		case <-time.After(20 * time.Second):
			t.Fatalf("no %s", what)
		}
		return target.Event{}
	}
	next("entry stop")
	if bp {
		f, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		syms, _ := f.Symbols()
		f.Close()
		var addr uint64
		for _, s := range syms {
			if s.Name == "faulty_load" {
				addr = s.Value
			}
		}
		if f.Type == elf.ET_DYN {
			m, _ := p.MemoryMap()
			for _, r := range m {
				if r.FileName == path && r.Offset == 0 {
					addr += r.Addr
					break
				}
			}
		}
		if _, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: addr, Internal: true,
			OnHit: func(*target.Context, *target.Breakpoint) *target.SuspendReason { return nil }}); err != nil {
			t.Fatal(err)
		}
	}
	th := p.Children()[0]
	if err := th.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	e := next("SIGSEGV stop")
	if e.Reason == nil || e.Reason.Signal != target.Signal(unix.SIGSEGV) {
		t.Fatalf("stop %+v", e.Reason)
	}
	s := New(tg, Options{})
	tr, err := s.Backtrace(e.Context, StackOptions{NoInline: true})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
