package services

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/tcf"
)

// Terminals launches interactive shells on pseudo-terminals; their input and
// output are streams of type "Terminals".

type terminal struct {
	id     string
	pid    int
	pty    *os.File
	in     *stream
	out    *stream
	width  int
	height int
	ptyTyp string
	enc    string
}

// terminalsSvc is the Terminals service: the terminals it launched, each
// forgotten when its shell exits.
type terminalsSvc struct {
	a    *Agent
	mu   sync.Mutex
	byID map[string]*terminal
}

// RegisterTerminals adds the Terminals service.
func (a *Agent) RegisterTerminals() {
	ts := &terminalsSvc{a: a, byID: map[string]*terminal{}}
	svc := a.srv.Service("Terminals")
	svc.Command("getContext", ts.getContext)
	svc.Command("launch", ts.launch)
	svc.Command("setWinSize", ts.setWinSize)
	svc.Command("exit", ts.exit)
}

func (ts *terminalsSvc) getContext(c *tcf.Call) {
	args := c.Args()
	id := args.String()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	ts.mu.Lock()
	t := ts.byID[id]
	ts.mu.Unlock()
	if t == nil {
		c.Reply().Error(tcf.Errorf(tcf.CodeInvalidContext, "no terminal %q", id)).Null().Send()
		return
	}
	c.Reply().Error(nil).Data(t.props()).Send()
}

func (ts *terminalsSvc) launch(c *tcf.Call) {
	args := c.Args()
	ptyType, enc := args.String(), args.String()
	env := args.Strings()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	t, err := ts.launchTerminal(ptyType, enc, env)
	if err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).Data(t.props()).Send()
}

func (ts *terminalsSvc) setWinSize(c *tcf.Call) {
	a := ts.a
	args := c.Args()
	id := args.String()
	w, h := args.Int(), args.Int()
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	ts.mu.Lock()
	t := ts.byID[id]
	ts.mu.Unlock()
	if t == nil {
		c.ReplyError(tcf.Errorf(tcf.CodeInvalidContext, "no terminal %q", id))
		return
	}
	err := unix.IoctlSetWinsize(int(t.pty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(w), Row: uint16(h)})
	if err == nil {
		t.width, t.height = w, h
		a.emit("Terminals", "winSizeChanged", id, w, h)
	}
	c.ReplyError(errnoError("set window size", err))
}

func (ts *terminalsSvc) exit(c *tcf.Call) {
	args := c.Args()
	id := args.String()
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	ts.mu.Lock()
	t := ts.byID[id]
	ts.mu.Unlock()
	if t == nil {
		c.ReplyError(tcf.Errorf(tcf.CodeInvalidContext, "no terminal %q", id))
		return
	}
	c.ReplyError(errnoError("exit", unix.Kill(t.pid, unix.SIGHUP)))
}

// terminalProps are a terminal's Terminals properties, in the order the
// replies have always had them (the keys' order).
type terminalProps struct {
	Encoding  string `json:"Encoding"`
	Height    int    `json:"Height"`
	ID        string `json:"ID"`
	ProcessID string `json:"ProcessID"`
	PtyType   string `json:"PtyType"`
	StdErrID  string `json:"StdErrID,omitempty"`
	StdInID   string `json:"StdInID,omitempty"`
	StdOutID  string `json:"StdOutID,omitempty"`
	Width     int    `json:"Width"`
}

func (t *terminal) props() terminalProps {
	p := terminalProps{ID: t.id, ProcessID: "P" + strconv.Itoa(t.pid), PtyType: t.ptyTyp, Encoding: t.enc,
		Width: t.width, Height: t.height}
	if t.in != nil {
		p.StdInID = t.in.id
	}
	if t.out != nil {
		p.StdOutID = t.out.id
		p.StdErrID = t.out.id
	}
	return p
}

func (ts *terminalsSvc) launchTerminal(ptyType, enc string, env []string) (*terminal, error) {
	a := ts.a
	master, slave, err := openPty()
	if err != nil {
		return nil, err
	}
	defer slave.Close()
	shell := os.Getenv("SHELL")
	if shell == "" {
		shell = "/bin/sh"
	}
	cmd := exec.Command(shell, "-l")
	if len(env) > 0 {
		cmd.Env = env
	}
	if ptyType != "" {
		cmd.Env = append(append([]string(nil), cmd.Environ()...), "TERM="+ptyType)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		master.Close()
		return nil, errnoError("launch terminal", err)
	}
	t := &terminal{pid: cmd.Process.Pid, pty: master, ptyTyp: ptyType, enc: enc, width: 80, height: 24}
	t.id = "PTY" + strconv.Itoa(t.pid)
	ctxID := "P" + strconv.Itoa(t.pid)
	if t.in = a.streams.create("Terminals", ctxID); t.in != nil {
		t.in.w = master
	}
	if t.out = a.streams.create("Terminals", ctxID); t.out != nil {
		go pump(t.out, master)
	}
	ts.mu.Lock()
	ts.byID[t.id] = t
	ts.mu.Unlock()
	go func() {
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		master.Close()
		ts.mu.Lock()
		delete(ts.byID, t.id)
		ts.mu.Unlock()
		a.emit("Terminals", "exited", t.id, code)
	}()
	return t, nil
}

// openPty opens a new pseudo-terminal pair.
func openPty() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, errnoError("open pty", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, errnoError("unlock pty", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, errnoError("pty number", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, errnoError("open pty slave", err)
	}
	return m, s, nil
}
