package ptrace

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/target"
)

func TestLaunchExitCode(t *testing.T) {
	tg, r := newTarget(t)
	path := build(t, "tp_exit.c")
	p, _, err := tg.Launch(target.LaunchOptions{Path: path, Argv: []string{path, "code", "9"}})
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	e := r.wait(t, &i, "process exit", isExit(p))
	if e.Exit.Code != 9 || e.Exit.Signal != 0 || e.Exit.TCFCode() != 9 {
		t.Fatalf("exit %v, want code 9", e.Exit)
	}
	// Created process, created thread, ..., exited thread, exited process.
	evs := r.all()
	if evs[0].Kind != target.EventCreated || evs[0].Context != p || evs[1].Kind != target.EventCreated {
		t.Fatalf("first events: %s, %s", describe(evs[0]), describe(evs[1]))
	}
}

func TestStopAtEntryAndKilledBySignal(t *testing.T) {
	tg, r := newTarget(t)
	path := build(t, "tp_exit.c")
	p := launch(t, tg, path, "signal", "15")
	th := mainThread(t, p)
	i := 0
	e := r.wait(t, &i, "entry stop", isStop(p))
	if e.Reason.Kind != target.ReasonUser {
		t.Fatalf("entry stop reason %v", e.Reason.Kind)
	}
	regs, err := th.Registers()
	if err != nil {
		t.Fatal(err)
	}
	// At entry the PC is in the dynamic loader, not yet in the program.
	if regs.PC() != e.PC || regs.PC() == 0 {
		t.Fatalf("pc %x, event pc %x", regs.PC(), e.PC)
	}
	if err := p.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	e = r.wait(t, &i, "SIGTERM stop", isStop(p))
	if e.Reason.Kind != target.ReasonSignal || e.Reason.Signal != 15 || !th.Pending().Has(15) {
		t.Fatalf("stop %v signal %d pending %x", e.Reason.Kind, e.Reason.Signal, th.Pending())
	}
	if err := th.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	e = r.wait(t, &i, "exit", isExit(p))
	if e.Exit.Signal != 15 || e.Exit.TCFCode() != -15 {
		t.Fatalf("exit %v, want killed by SIGTERM", e.Exit)
	}
	if _, err := th.Registers(); !errors.Is(err, target.ErrAlreadyExited) {
		t.Fatalf("registers of exited thread: %v", err)
	}
	if err := p.Resume(target.ResumeContinue, target.ResumeOptions{}); !errors.Is(err, target.ErrAlreadyExited) {
		t.Fatalf("resume of exited process: %v", err)
	}
}

func TestLaunchStdioPipesEnvDirASLR(t *testing.T) {
	tg, r := newTarget(t)
	dir := t.TempDir()
	p, pio, err := tg.Launch(target.LaunchOptions{Path: "/bin/sh", Argv: []string{"sh", "-c", "echo $FOO; pwd; cat /proc/self/personality; read x; echo got $x >&2"},
		Env: []string{"FOO=bar"}, Dir: dir, Stdio: target.StdioPipes, DisableASLR: true})
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(pio.Stdin, "line\n")
	pio.Stdin.Close()
	out, _ := io.ReadAll(pio.Stdout)
	errOut, _ := io.ReadAll(pio.Stderr)
	i := 0
	r.wait(t, &i, "exit", isExit(p))
	want := "bar\n" + dir + "\n00040000\n"
	if string(out) != want || string(errOut) != "got line\n" {
		t.Fatalf("stdout %q (want %q), stderr %q", out, want, errOut)
	}
}

func TestLaunchPty(t *testing.T) {
	tg, r := newTarget(t)
	p, pio, err := tg.Launch(target.LaunchOptions{Path: "/bin/sh", Argv: []string{"sh", "-c", "test -t 0 && test -t 1 && echo tty"}, Stdio: target.StdioPty})
	if err != nil {
		t.Fatal(err)
	}
	defer pio.Pty.Close()
	buf := make([]byte, 64)
	n, _ := pio.Pty.Read(buf)
	i := 0
	e := r.wait(t, &i, "exit", isExit(p))
	if !strings.Contains(string(buf[:n]), "tty") || e.Exit.Code != 0 {
		t.Fatalf("pty output %q, exit %v", buf[:n], e.Exit)
	}
}

func TestLaunchMissingProgram(t *testing.T) {
	tg, _ := newTarget(t)
	_, _, err := tg.Launch(target.LaunchOptions{Path: "/nonexistent/prog"})
	if err == nil || target.CodeOf(err) != target.CodeOther || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("launch of missing program: %v", err)
	}
}

func TestAttachDetachRunsOn(t *testing.T) {
	path := build(t, "tp_threads.c")
	cmd := startUntraced(t, path)
	pid := cmd.Process.Pid
	tg, r := newTarget(t)
	p, err := tg.Attach(pid, target.AttachOptions{Stop: true})
	if err != nil {
		t.Fatal(err)
	}
	ths := p.Children()
	if len(ths) != 5 {
		t.Fatalf("%d threads, want 5", len(ths))
	}
	for _, th := range ths {
		if s, reason, _ := th.State(); s != target.StateStopped || reason.Kind != target.ReasonUser {
			t.Fatalf("%s: state %v", th.ID(), s)
		}
		if _, err := th.Registers(); err != nil {
			t.Fatal(err)
		}
	}
	if st := procState(t, pid); st.TracerPid == 0 || st.State != 't' {
		t.Fatalf("while attached: state %c tracer %d", st.State, st.TracerPid)
	}
	if _, err := tg.Attach(pid, target.AttachOptions{}); target.CodeOf(err) != target.CodeAlreadyAttached {
		t.Fatalf("second attach: %v", err)
	}
	if err := p.Detach(); err != nil {
		t.Fatal(err)
	}
	i := 0
	if e := r.wait(t, &i, "exit after detach", isExit(p)); !e.Exit.Detached {
		t.Fatalf("detach reported %v", e.Exit)
	}
	st := waitState(t, pid, "S")
	if st.TracerPid != 0 {
		t.Fatalf("after detach: tracer %d", st.TracerPid)
	}
	// The os/exec child of this process was never reaped by sonde.
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Fatalf("os/exec Wait after detach: %v", err)
	}
}

func TestDetachKeepsJobControlStop(t *testing.T) {
	path := build(t, "tp_threads.c")
	for _, stop := range []bool{false, true} {
		cmd := startUntraced(t, path)
		pid := cmd.Process.Pid
		cmd.Process.Signal(unix.SIGSTOP)
		waitState(t, pid, "T")
		tg, _ := newTarget(t)
		p, err := tg.Attach(pid, target.AttachOptions{Stop: stop})
		if err != nil {
			t.Fatal(err)
		}
		if !stop {
			// Attached and "running", but still held by the job-control stop.
			for _, th := range p.Children() {
				if s, _, _ := th.State(); s != target.StateRunning {
					t.Fatalf("%s: %v", th.ID(), s)
				}
			}
		}
		if err := p.Detach(); err != nil {
			t.Fatal(err)
		}
		if st := waitState(t, pid, "T"); st.TracerPid != 0 {
			t.Fatalf("tracer %d after detach", st.TracerPid)
		}
		cmd.Process.Signal(unix.SIGCONT)
		waitState(t, pid, "S")
	}
}

func TestAttachErrors(t *testing.T) {
	path := build(t, "tp_threads.c")
	cmd := startUntraced(t, path) // first: its cleanup runs after the targets'
	tg, _ := newTarget(t)
	_, err := tg.Attach(0x3ffffff0, target.AttachOptions{})
	var te *target.Error
	if !errors.As(err, &te) || te.Code != target.CodeInvalidContext || te.Errno != unix.ESRCH {
		t.Fatalf("attach to missing pid: %v", err)
	}
	if _, err := tg.Attach(cmd.Process.Pid, target.AttachOptions{}); err != nil {
		t.Fatal(err)
	}
	other, _ := newTarget(t)
	_, err = other.Attach(cmd.Process.Pid, target.AttachOptions{})
	if !errors.As(err, &te) || te.Code != target.CodeAlreadyAttached || te.Errno != unix.EPERM {
		t.Fatalf("attach to a traced process: %v", err)
	}
	// A zombie (exited, not yet reaped by its parent — this test) is reported
	// as exited, not as a permission problem.
	z := exec.Command("true")
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	defer z.Wait()
	for i := 0; i < 200; i++ {
		if st, err := readStatus(z.Process.Pid); err == nil && st.State == 'Z' {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, err = other.Attach(z.Process.Pid, target.AttachOptions{})
	if !errors.As(err, &te) || te.Code != target.CodeAlreadyExited {
		t.Fatalf("attach to a zombie: %v", err)
	}
}

// TestForeignChildrenAreNotReaped runs short os/exec children of this process
// while sonde traces a busy process: their exit statuses must reach their own
// Wait, never sonde's reaper.
func TestForeignChildrenAreNotReaped(t *testing.T) {
	tg, r := newTarget(t)
	path := build(t, "tp_hotloop.c")
	p := launch(t, tg, path, "0")
	i := 0
	r.wait(t, &i, "entry", isStop(p))
	if _, err := tg.SetBreakpoint(p, target.BreakpointSpec{Addr: symbol(t, p, path, "tick")}); err != nil {
		t.Fatal(err)
	}
	p.Resume(target.ResumeContinue, target.ResumeOptions{})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // keep the tracee stopping and starting meanwhile
		defer close(done)
		j := i
		for {
			select {
			case <-stop:
				return
			default:
			}
			e := r.wait(t, &j, "hit", isStop(p))
			e.Context.Resume(target.ResumeContinue, target.ResumeOptions{})
		}
	}()
	for k := 0; k < 20; k++ {
		cmd := exec.Command("/bin/sh", "-c", "exit 7")
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 7 {
			t.Fatalf("os/exec child %d: %v", k, err)
		}
	}
	close(stop)
	<-done
}

// TestJobControlWhileAttached: a traced process stopped by SIGSTOP stays stopped
// (held with PTRACE_LISTEN, not reported as a debugger stop) and runs again on
// SIGCONT, still traced.
func TestJobControlWhileAttached(t *testing.T) {
	path := build(t, "tp_threads.c")
	cmd := startUntraced(t, path)
	pid := cmd.Process.Pid
	tg, r := newTarget(t)
	p, err := tg.Attach(pid, target.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.SetSignalMasks(target.DefaultDontStop.With(target.Signal(unix.SIGSTOP)).With(target.Signal(unix.SIGCONT)), 0)
	cmd.Process.Signal(unix.SIGSTOP)
	if st := waitState(t, pid, "t"); st.TracerPid == 0 {
		t.Fatal("not traced")
	}
	for _, th := range p.Children() {
		if s, _, _ := th.State(); s != target.StateRunning {
			t.Fatalf("%s reported %v during a job-control stop", th.ID(), s)
		}
	}
	cmd.Process.Signal(unix.SIGCONT)
	waitState(t, pid, "S")
	// Still under control: a suspend works and resumes.
	if err := p.Suspend(); err != nil {
		t.Fatal(err)
	}
	if err := p.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, e := range r.all() {
		if e.Kind == target.EventStopped && e.Reason.Kind != target.ReasonUser {
			t.Fatalf("unexpected stop %s", describe(e))
		}
	}
}

// A bug met while handling a tracee status loses that status's handling, not
// the tracer thread: the backend goes on, and closing it still releases the
// process (a panic there used to end the process with every tracee stopped).
// Nor the thread: it is reported stopped with the error and its signal kept,
// and a resume lets it go on (it used to sit in its signal stop while sonde
// took it for running, until a detach gave up waiting for it).
func TestStatusPanicLosesOnlyTheStatus(t *testing.T) {
	path := build(t, "tp_hotloop.c")
	tg, r := newTarget(t)
	p := launch(t, tg, path)
	pid := p.PID()
	i := 0
	r.wait(t, &i, "entry", isStop(p))
	proc := testprog.OpenProc(t, pid)
	var armed atomic.Bool
	armed.Store(true)
	hook := func(ev waitEvent) {
		if ev.tid == pid && armed.CompareAndSwap(true, false) {
			panic("planted")
		}
	}
	beforeHandle.Store(&hook)
	defer beforeHandle.Store(nil)
	th := p.Children()[0]
	if err := th.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	// A signal-delivery stop (SIGWINCH is ignored by the program, but a
	// tracee reports it all the same) is the status the hook spoils.
	if err := proc.Signal(unix.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	for i := 0; armed.Load(); i++ {
		if i == 2000 {
			t.Fatal("the signal's status never came")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e := r.wait(t, &i, "the spoiled stop", isStop(th))
	if e.Reason == nil || e.Reason.Kind != target.ReasonException || !strings.Contains(e.Reason.Message, "planted") {
		t.Fatalf("spoiled stop reported as %s", describe(e))
	}
	if st := procState(t, pid); st.State != 't' {
		t.Fatalf("reported stopped, state %c", st.State)
	}
	// The backend still serves requests, and the thread runs on.
	if _, err := th.Registers(); err != nil {
		t.Fatalf("registers after the panic: %v", err)
	}
	if err := th.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, "RS")
	if err := tg.Close(); err != nil {
		t.Fatalf("close after the panic: %v", err)
	}
	if st := waitState(t, pid, "RS"); st.TracerPid != 0 {
		t.Fatalf("after close: state %c, tracer %d", st.State, st.TracerPid)
	}
}
