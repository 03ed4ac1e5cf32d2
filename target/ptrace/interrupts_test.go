package ptrace

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
)

// TestInterruptAfterInt3: a thread hammering breakpoints (eventpoints: each
// hit is passed on the tracer thread) is stopped again and again by Halt,
// and a system call is injected into it each time. An interrupt that
// arrives as the thread executes an int3 is reported before that int3's
// SIGTRAP: the thread must still be shown at an instruction boundary (never
// one past a breakpoint) and the injected call must run (the queued SIGTRAP
// used to end it where it began). The program must keep running and pass
// every hit.
func TestInterruptAfterInt3(t *testing.T) {
	path := build(t, "tp_dstep.c")
	tg, r := newTarget(t)
	b := tg.Backend().(*Backend)
	p := launch(t, tg, path, "spin")
	i := 0
	r.wait(t, &i, "entry", isStop(p))
	var hits atomic.Int64
	bps := map[uint64]string{}
	for _, s := range dstepCases {
		a := symbol(t, p, path, s)
		bps[a] = s
		if _, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: a, Internal: true,
			OnHit: func(*target.Context, *target.Breakpoint) *target.SuspendReason { hits.Add(1); return nil }}); err != nil {
			t.Fatal(err)
		}
	}
	if err := mainThread(t, p).Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	pid := uint64(p.PID())
	const halts = 3000
	bad := 0
	for k := 0; k < halts; k++ {
		err := b.Halt(p, func(h *Halted) error {
			for _, pc := range h.ThreadPCs() {
				if s, ok := bps[pc-1]; ok && bad < 5 {
					bad++
					t.Errorf("halt %d: thread shown at %#x, one past the breakpoint at %s", k, pc, s)
				}
			}
			got, err := h.Syscall(unix.SYS_GETPID)
			if err != nil {
				return err
			}
			if got != pid {
				t.Errorf("halt %d: injected getpid returned %d, want %d", k, got, pid)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("halt %d: %v", k, err)
		}
	}
	before := hits.Load()
	time.Sleep(20 * time.Millisecond)
	if hits.Load() == before {
		t.Errorf("no hit after the halts: the program is not running on")
	}
	var taken int
	b.do("stats", func() error { taken = b.dstats.int3TrapsTaken; return nil })
	t.Logf("%d halts, %d hits; %d interrupts came with an int3 trap queued", halts, hits.Load(), taken)
}
