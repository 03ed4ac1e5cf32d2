package ptrace

import (
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
)

// TestAttachWhileThreadsComeAndGo attaches to a process that creates and joins
// threads all the time: every thread present after the attach must be traced by
// sonde, and detaching must leave none traced.
func TestAttachWhileThreadsComeAndGo(t *testing.T) {
	path := build(t, "tp_threads.c")
	cmd := startUntraced(t, path, "churn")
	pid := cmd.Process.Pid
	for round := 0; round < 5; round++ {
		tg, _ := newTarget(t)
		p, err := tg.Attach(pid, target.AttachOptions{Stop: true})
		if err != nil {
			t.Fatal(err)
		}
		tids, err := taskIDs(pid)
		if err != nil {
			t.Fatal(err)
		}
		known := map[int]bool{}
		for _, th := range p.Children() {
			known[th.TID()] = true
		}
		for _, tid := range tids {
			st, err := readStatus(tid)
			if err != nil {
				continue // exited just now
			}
			if st.TracerPid == 0 || !known[tid] {
				t.Fatalf("round %d: thread %d not traced (tracer %d, known %v)", round, tid, st.TracerPid, known[tid])
			}
		}
		if err := p.Detach(); err != nil {
			t.Fatal(err)
		}
		for _, tid := range tids {
			if st, err := readStatus(tid); err == nil && st.TracerPid != 0 {
				t.Fatalf("round %d: thread %d still traced after detach", round, tid)
			}
		}
		tg.Close()
	}
}

func TestTerminate(t *testing.T) {
	tg, r := newTarget(t)
	path := build(t, "tp_threads.c")
	p := launch(t, tg, path)
	i := 0
	r.wait(t, &i, "entry", isStop(p))
	p.Resume(target.ResumeContinue, target.ResumeOptions{})
	if err := p.Terminate(); err != nil {
		t.Fatal(err)
	}
	// Terminate returns once the exit has been reported.
	if e := p.Exit(); e == nil || e.Signal != target.Signal(unix.SIGKILL) || e.TCFCode() != -9 {
		t.Fatalf("exit after terminate: %v", e)
	}
	if err := p.Terminate(); !errors.Is(err, target.ErrAlreadyExited) {
		t.Fatalf("second terminate: %v", err)
	}
}

// TestTargetDiesMidOperation kills the process behind sonde's back, in every
// state, and checks that operations fail with typed errors and nothing hangs.
func TestTargetDiesMidOperation(t *testing.T) {
	path := build(t, "tp_threads.c")
	for _, stopped := range []bool{false, true} {
		t.Run(fmt.Sprint("stopped=", stopped), func(t *testing.T) {
			cmd := startUntraced(t, path)
			tg, r := newTarget(t)
			p, err := tg.Attach(cmd.Process.Pid, target.AttachOptions{Stop: stopped})
			if err != nil {
				t.Fatal(err)
			}
			ths := p.Children()
			cmd.Process.Kill()
			// Whatever the timing, each call returns: an error of the model's, or
			// success if it ran before the death was noticed.
			for _, th := range ths {
				checkTyped(t, "registers", func() error { _, err := th.Registers(); return err })
				checkTyped(t, "suspend", th.Suspend)
				checkTyped(t, "resume", func() error { return th.Resume(target.ResumeStepInto, target.ResumeOptions{}) })
				checkTyped(t, "write registers", func() error {
					return th.WriteRegister(tg.Arch().ByName("rax"), 0, []byte{1})
				})
			}
			checkTyped(t, "suspend process", p.Suspend)
			_, err = p.ReadMemory(0x1000, make([]byte, 8))
			checkTyped(t, "read memory", func() error { return err })
			i := 0
			if e := r.wait(t, &i, "exit", isExit(p)); e.Exit.Signal != target.Signal(unix.SIGKILL) {
				t.Fatalf("exit %v", e.Exit)
			}
			if err := p.Detach(); !errors.Is(err, target.ErrAlreadyExited) {
				t.Fatalf("detach after death: %v", err)
			}
		})
	}
}

func checkTyped(t *testing.T, what string, f func() error) {
	t.Helper()
	err := f()
	if err == nil {
		return
	}
	var te *target.Error
	var me *target.MemoryError
	if !errors.As(err, &te) && !errors.As(err, &me) {
		t.Fatalf("%s: untyped error %T: %v", what, err, err)
	}
}
