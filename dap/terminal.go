package dap

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	godap "github.com/google/go-dap"
	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/ptrace"
)

// runInTerminal (lldb-dap's launch option, for clients that support the
// reverse request): the client's terminal runs a shell that writes its
// process ID into a FIFO, stops itself and, once continued, execs the
// program; sonde attaches to the stopped shell. The program's standard
// streams are the terminal's. Breakpoints planted in the shell are gone at
// the exec; they are planted again when the program's dynamic linker
// loads its first library (before main).

// terminalWait bounds how long the terminal may take to start the shell.
const terminalWait = 30 * time.Second

// terminalScript: $0 is the FIFO, "$@" the program and its arguments.
const terminalScript = `echo $$ > "$0" && kill -STOP $$ && exec "$@"`

type runInTerminalRequest struct {
	godap.Request
	Arguments godap.RunInTerminalRequestArguments `json:"arguments"`
}

func (s *Server) startInTerminal(a launchArgs, prog string) (*debuggee, error) {
	dir, err := os.MkdirTemp("", "sonde-dap-")
	if err != nil {
		return nil, errorf("runInTerminal: %v", err)
	}
	defer os.RemoveAll(dir)
	fifo := filepath.Join(dir, "pid")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		return nil, errorf("runInTerminal: %v", err)
	}
	env := map[string]any{}
	for _, kv := range a.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	cwd := a.Cwd
	if cwd == "" {
		cwd = filepath.Dir(prog)
	}
	kind := "integrated"
	if a.Console == "externalTerminal" {
		kind = "external"
	}
	req := &runInTerminalRequest{Request: godap.Request{ProtocolMessage: godap.ProtocolMessage{Type: "request"}, Command: "runInTerminal"},
		Arguments: godap.RunInTerminalRequestArguments{Kind: kind, Title: "sonde: " + filepath.Base(prog), Cwd: cwd,
			Args: append([]string{"/bin/sh", "-c", terminalScript, fifo, prog}, a.Args...), Env: env}}
	s.send(&req.Request.ProtocolMessage, req)

	pid, err := readPID(fifo)
	if err != nil {
		return nil, errorf("runInTerminal: %v", err)
	}
	if err := waitStopped(pid); err != nil {
		return nil, errorf("runInTerminal: %v", err)
	}
	t, err := ptrace.New()
	if err != nil {
		return nil, errorf("runInTerminal: %v", err)
	}
	d := &debuggee{s: s, tgt: t, program: prog, launched: true, stopOnEntry: a.StopOnEntry, args: a}
	d.listen()
	proc, err := t.Attach(pid, target.AttachOptions{Stop: true})
	if err != nil {
		t.Close()
		unix.Kill(pid, unix.SIGKILL)
		return nil, errorf("runInTerminal: attach to %d: %v", pid, err)
	}
	d.setProc(proc)
	if a.DisableASLR == nil || *a.DisableASLR {
		// The shell execs the program: with its personality's
		// ADDR_NO_RANDOMIZE set, the program runs as a launch by sonde runs it.
		if err := noRandomize(t, proc); err != nil {
			s.output("console", fmt.Sprintf("sonde: runInTerminal: address randomisation stays on: %v\n", err))
		}
	}
	// The shell's own SIGSTOP is ended here, silently (the SIGCONT is not
	// a stop for the client); it goes on when configured.
	proc.SetSignalMasks(proc.DontStop().With(target.Signal(unix.SIGCONT)), proc.DontPass())
	unix.Kill(pid, unix.SIGCONT)
	d.sess = s.newSession(t, a.DebugDirs)
	d.sess.OnModulesChanged(d.modulesChanged)
	if err := d.sess.TrackModules(proc, false); err != nil {
		s.output("console", fmt.Sprintf("sonde: not following library loads: %v\n", err))
	}
	t.OnExec(func(p *target.Context) {
		if p == d.proc {
			s.bps.execed(d)
		}
	})
	s.mu.Lock()
	s.dbg = d
	s.mu.Unlock()
	s.bps.replantAll(d)
	return d, nil
}

// noRandomize makes the stopped shell, which will exec the program, turn
// address randomisation off for itself (personality(2) changes only its
// caller's personality, which an exec keeps): two personality calls
// injected into it, the first reading its personality.
func noRandomize(t *target.Target, proc *target.Context) error {
	b, ok := t.Backend().(*ptrace.Backend)
	if !ok {
		return fmt.Errorf("not a ptrace target")
	}
	return b.Halt(proc, func(h *ptrace.Halted) error {
		old, err := h.Syscall(unix.SYS_PERSONALITY, 0xffffffff)
		if err == nil && int64(old) < 0 {
			err = unix.Errno(-int64(old))
		}
		if err != nil {
			return fmt.Errorf("personality: %w", err)
		}
		r, err := h.Syscall(unix.SYS_PERSONALITY, old|addrNoRandomize)
		if err == nil && int64(r) < 0 {
			err = unix.Errno(-int64(r))
		}
		if err != nil {
			return fmt.Errorf("personality(%#x): %w", old|addrNoRandomize, err)
		}
		return nil
	})
}

// addrNoRandomize is personality(2)'s ADDR_NO_RANDOMIZE.
const addrNoRandomize = 0x0040000

// readPID reads the shell's process ID from the FIFO.
func readPID(fifo string) (int, error) {
	type result struct {
		pid int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		f, err := os.Open(fifo) // blocks until the shell opens it
		if err != nil {
			ch <- result{0, err}
			return
		}
		defer f.Close()
		line, err := bufio.NewReader(f).ReadString('\n')
		pid, perr := strconv.Atoi(strings.TrimSpace(line))
		if perr != nil || pid <= 0 {
			ch <- result{0, fmt.Errorf("the terminal's shell wrote %q (%v)", line, err)}
			return
		}
		ch <- result{pid, nil}
	}()
	select {
	case r := <-ch:
		return r.pid, r.err
	case <-time.After(terminalWait):
		// Unblock the reader.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		return 0, fmt.Errorf("the client's terminal did not start the program within %v", terminalWait)
	}
}

// waitStopped waits until the shell has stopped itself.
func waitStopped(pid int) error {
	for i := 0; i < 1000; i++ {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return fmt.Errorf("process %d: %v", pid, err)
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == 'T' {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("process %d did not stop", pid)
}

// execed forgets what was planted in a process whose exec replaced its
// address space: its breakpoints are planted again at the first library
// load of the new program.
func (t *breakpointTable) execed(d *debuggee) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for tb, cb := range t.byPlanted {
		if tb.Process == d.proc {
			delete(t.byPlanted, tb)
			cb.planted, cb.verified = nil, false
		}
	}
}
