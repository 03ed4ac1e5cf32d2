package ptrace

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
)

// A PTRACE_INTERRUPT is used up by whatever ptrace-stop comes first: the
// kernel clears a pending interrupt trap at any stop (a clone event, a
// signal), so a thread that reports another stop after sonde interrupted it
// never reports the interrupt stop. stopOthers, Suspend and detach wait for
// that stop; a thread restarted with th.interrupting still set used to run
// on with no interrupt pending, and the next wait for it never ended
// (TestStopTheWorldThreads, 2 in 30: the main thread's clone event took the
// interrupt, and the next hit waited for good for the main thread blocked in
// pthread_join, every other thread held). Which stop the kernel reports first
// is a race, so the test makes the state itself: it interrupts the thread,
// takes the interrupt stop as if it were another stop that used the interrupt
// up (th.interrupting stays set, no interrupt is pending in the kernel), and
// restarts it the way handle does. A suspend must still stop it.
func TestInterruptUsedUpByAnotherStop(t *testing.T) {
	path := build(t, "tp_hotloop.c")
	tg, r := newTarget(t)
	p := launch(t, tg, path) // one thread in a loop that never stops on its own
	th := mainThread(t, p)
	i := 0
	r.wait(t, &i, "entry", isStop(p))
	if err := th.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	b := tg.Backend().(*Backend)
	err := b.do("test", func() error {
		bt := b.threads[p.PID()]
		if bt == nil || !bt.running || bt.interrupting {
			return fmt.Errorf("thread not running as expected: %+v", bt)
		}
		if err := interrupt(bt.tid); err != nil {
			return err
		}
		ws, err := b.waitFor(bt.tid)
		if err != nil {
			return err
		}
		if !ws.Stopped() || int(ws)>>16 != eventStop || ws.StopSignal() != unix.SIGTRAP {
			return fmt.Errorf("status %#x, want an interrupt stop", uint32(ws))
		}
		bt.running = false
		bt.invalidateRegs()
		bt.interrupting = true // asked for, and used up by "another" stop
		b.restartAsBefore(bt)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Suspend() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		// (The cleanup's SIGKILL ends the wait.)
		t.Fatal("suspend never returned: it waits for an interrupt stop that will not come")
	}
	r.wait(t, &i, "the suspend's stop", isStop(th))
}
