package probes

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/translate"
)

// stopRecorder collects the stops a run reports and resumes after each.
type stopRecorder struct {
	ch chan target.Event
}

func recordStops(r *run) *stopRecorder {
	rec := &stopRecorder{ch: make(chan target.Event, 64)}
	r.tg.AddListener(func(e target.Event) {
		if e.Kind == target.EventStopped && !e.Context.IsProcess() && e.Context.Process() == r.proc {
			rec.ch <- e
		}
	})
	return rec
}

// TestStopIf: a compiled condition with || and && over a register stops the
// program exactly at the calls where it holds, each stop reported at the
// probed function's entry with the application's registers, and resuming
// from a stop does not stop there again; the program's output equals an
// untraced run's.
func TestStopIf(t *testing.T) {
	path := buildProg(t, true)
	const n = 5000
	r := start(t, path, fmt.Sprint(n))
	rec := recordStops(r)
	hotAddr, hotFn := r.function("hot")
	arg := Value{Reg: "rdi", Size: 8, Signed: true}
	// rdi < 2 || (rdi >= n-2 && rdi != n-1)
	x := &Expr{Op: "||",
		L: &Expr{Cmp: &Compare{Value: arg, Op: "<", Const: 2}},
		R: &Expr{Op: "&&",
			L: &Expr{Cmp: &Compare{Value: arg, Op: ">=", Const: n - 2}},
			R: &Expr{Cmp: &Compare{Value: arg, Op: "!=", Const: n - 1}}}}
	var bp *target.Breakpoint
	p, err := r.set.AddStopIf("hot", hotAddr, hotFn, x, func(th *target.Context, b *target.Breakpoint) *target.SuspendReason {
		return &target.SuspendReason{Kind: target.ReasonBreakpoint, Breakpoints: []*target.Breakpoint{b}}
	})
	if err != nil {
		t.Fatal(err)
	}
	bp = p.Breakpoint()
	rec.drain()
	if err := r.proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	var seen []uint64
	for done := false; !done; {
		select {
		case e := <-rec.ch:
			if e.Reason == nil || e.Reason.Kind != target.ReasonBreakpoint || len(e.Reason.Breakpoints) != 1 || e.Reason.Breakpoints[0] != bp {
				t.Fatalf("stop %+v", e.Reason)
			}
			regs, err := e.Context.Registers()
			if err != nil {
				t.Fatal(err)
			}
			_, _, pc := e.Context.State()
			if pc != hotAddr || regs.PC() != hotAddr {
				t.Fatalf("stop at %#x (registers %#x), want hot at %#x", pc, regs.PC(), hotAddr)
			}
			// At the entry, the word at rsp is the return address into main.
			sp, _ := regs.Uint64(regs.Arch.ByName("rsp"))
			var w [8]byte
			if _, err := r.proc.ReadMemory(sp, w[:]); err != nil {
				t.Fatal(err)
			}
			if ra := leU64(w[:]); ra < hotAddr-0x10000 || ra > hotAddr+0x10000 {
				t.Errorf("return address at rsp %#x is %#x: rsp is not the application's", sp, ra)
			}
			v, _ := regs.Uint64(regs.Arch.ByName("rdi"))
			seen = append(seen, v)
			if err := e.Context.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
				t.Fatal(err)
			}
		case st := <-r.exited:
			if st.Code != 0 || st.Signal != 0 {
				t.Fatalf("exit %s", st)
			}
			done = true
		case <-time.After(60 * time.Second):
			t.Fatalf("no exit; stops so far at rdi %v", seen)
		}
	}
	if want := fmt.Sprint([]uint64{0, 1, n - 2}); fmt.Sprint(seen) != want {
		t.Errorf("stopped at rdi %v, want %s", seen, want)
	}
	if p.Hits() != 3 {
		t.Errorf("%d hits, want 3", p.Hits())
	}
	if out, u := <-r.out, untraced(t, path, fmt.Sprint(n)); out != u {
		t.Errorf("output %q, untraced %q", out, u)
	}
}

// TestFaultInPayloadShowsAppPC: a payload that faults (a condition reading
// memory at an argument that is no pointer) is reported at the probed
// application pc with the application's registers (rax and the flags from
// the payload's save area, rsp adjusted), never at a cache pc.
func TestFaultInPayloadShowsAppPC(t *testing.T) {
	path := buildProg(t, true)
	r := start(t, path, "10")
	rec := recordStops(r)
	hotAddr, hotFn := r.function("hot")
	x := &Expr{Cmp: &Compare{Value: Value{Base: "rdi", Size: 8, Signed: true}, Op: "==", Const: 1}}
	if _, err := r.set.AddStopIf("hot", hotAddr, hotFn, x, nil); err != nil {
		t.Fatal(err)
	}
	// A library user's restore-state hook, through the model, runs for the
	// translation and sees the raw cache pc and the translated one.
	var hookMu sync.Mutex
	var hooked []string
	err := r.tg.AddRestoreHook(r.proc, func(ctx *translate.RestoreContext, raw, tr *translate.Regs, restoreMemory bool) error {
		hookMu.Lock()
		defer hookMu.Unlock()
		hooked = append(hooked, fmt.Sprintf("%s raw-in-cache=%v app=%#x", ctx.Entry.Owner, raw.RIP != tr.RIP, tr.RIP))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		hookMu.Lock()
		defer hookMu.Unlock()
		if want := fmt.Sprintf("probe hot raw-in-cache=true app=%#x", hotAddr); len(hooked) != 1 || hooked[0] != want {
			t.Errorf("restore hook calls %q, want [%q]", hooked, want)
		}
	}()
	rec.drain()
	if err := r.proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-rec.ch:
		if e.Reason == nil || e.Reason.Kind != target.ReasonSignal && e.Reason.Kind != target.ReasonException {
			t.Fatalf("stop %+v, want the fault", e.Reason)
		}
		regs, err := e.Context.Registers()
		if err != nil {
			t.Fatal(err)
		}
		_, _, pc := e.Context.State()
		if pc != hotAddr || regs.PC() != hotAddr {
			t.Fatalf("fault reported at %#x (registers %#x), want hot at %#x", pc, regs.PC(), hotAddr)
		}
		sp, _ := regs.Uint64(regs.Arch.ByName("rsp"))
		var w [8]byte
		r.proc.ReadMemory(sp, w[:])
		if ra := leU64(w[:]); ra < hotAddr-0x10000 || ra > hotAddr+0x10000 {
			t.Errorf("return address at rsp %#x is %#x: rsp is not the application's", sp, ra)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no fault reported")
	}
}

// drain forgets the stops reported so far (the entry stop).
func (rec *stopRecorder) drain() {
	time.Sleep(50 * time.Millisecond)
	for {
		select {
		case <-rec.ch:
		default:
			return
		}
	}
}

func leU64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}
