package services

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/tcf"
)

// launchedProcess is what Processes.start made for a process.
type launchedProcess struct {
	stdin, stdout, stderr *stream
	pty                   *os.File
}

// launchedTable holds what Processes.start made, per process ID, until the
// process is gone.
type launchedTable struct {
	mu   sync.Mutex
	byID map[string]*launchedProcess
}

// get returns what was made for process id, or nil.
func (lt *launchedTable) get(id string) *launchedProcess {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lt.byID[id]
}

// put records what was made for process id.
func (lt *launchedTable) put(id string, lp *launchedProcess) {
	lt.mu.Lock()
	lt.byID[id] = lp
	lt.mu.Unlock()
}

// take forgets process id and returns what was made for it, or nil.
func (lt *launchedTable) take(id string) *launchedProcess {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	lp := lt.byID[id]
	delete(lt.byID, id)
	return lp
}

// signalInfo is one signal of getSignalList's reply (fields in the order of
// their names, as a map of them was written).
type signalInfo struct {
	Code        int    `json:"Code"`
	Description string `json:"Description"`
	Index       int    `json:"Index"`
	Name        string `json:"Name"`
}

// launchTable is what launches keep about entry stops.
type launchTable struct {
	// mu is held across a launch until its entry stop is known to be
	// hidden or shown; hideEntry holds the processes started without
	// StopAtEntry, whose entry stop and the resume after it clients must not
	// see (the C agent shows neither).
	mu        sync.Mutex
	hideEntry map[int]int
	// entryStop holds the launched processes whose entry stop clients see:
	// it is reported with the SIGTRAP of the exec, as the C agent does.
	entryStop map[int]bool
}

// processes is the Processes service, or ProcessesV1: the same commands,
// V1's start taking its options as properties.
type processes struct {
	a    *Agent
	name string
	v1   bool
}

// RegisterProcesses adds the Processes and ProcessesV1 services.
func (a *Agent) RegisterProcesses() {
	for _, name := range []string{"Processes", "ProcessesV1"} {
		p := &processes{a: a, name: name, v1: name == "ProcessesV1"}
		p.register(a.srv.Service(name))
	}
}

func (p *processes) register(svc *tcf.Service) {
	svc.Command("getChildren", p.getChildren)
	queryByID(svc, "getContext", func(id string) (any, error) { return p.a.processContext(id) })
	svc.Command("attach", p.attach)
	svc.Command("detach", p.detach)
	svc.Command("terminate", p.terminate)
	svc.Command("signal", p.signal)
	svc.Command("getSignalList", p.getSignalList)
	svc.Command("getSignalMask", p.getSignalMask)
	svc.Command("setSignalMask", p.setSignalMask)
	svc.Command("getEnvironment", p.getEnvironment)
	svc.Command("start", p.start)
	if p.v1 {
		svc.Command("getCapabilities", p.getCapabilities)
		svc.Command("setWinSize", p.setWinSize)
	}
}

// getChildren lists the processes of the system, or only those attached.
func (p *processes) getChildren(c *tcf.Call) {
	a := p.a
	args := c.Args()
	parent := args.String()
	attachedOnly := args.Bool()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	out := []string{}
	if parent != "" {
		c.Reply().Error(nil).Data(out).Send()
		return
	}
	if attachedOnly {
		for _, p := range a.target.Processes() {
			out = append(out, string(p.ID()))
		}
	} else {
		for _, pid := range listPIDs() {
			out = append(out, string(target.ProcessID(pid)))
		}
	}
	c.Reply().Error(nil).Data(out).Send()
}

// attach attaches to a process and stops it for the channel.
func (p *processes) attach(c *tcf.Call) {
	a := p.a
	pid, err := pidArg(c)
	if err == nil {
		var proc *target.Context
		if proc, err = a.target.Attach(pid, target.AttachOptions{Stop: true}); err == nil {
			a.adopt(proc)
			a.own.requested(c.Channel(), proc) // the attach stop
		}
	}
	c.ReplyError(err)
}

func (p *processes) detach(c *tcf.Call) {
	a := p.a
	ctx, err := a.contextArg(c)
	if err == nil {
		err = ctx.Detach()
	}
	c.ReplyError(err)
}

// terminate kills a process, ours or not.
func (p *processes) terminate(c *tcf.Call) {
	a := p.a
	pid, err := pidArg(c)
	if err == nil {
		if ctx := a.target.LookupPID(pid, 0); ctx != nil {
			err = ctx.Terminate()
		} else {
			err = errnoError("terminate", unix.Kill(pid, unix.SIGKILL))
		}
	}
	c.ReplyError(err)
}

// signal sends a signal to a process or thread, ours or not.
func (p *processes) signal(c *tcf.Call) {
	a := p.a
	args := c.Args()
	id := args.String()
	sig := args.Int()
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	pid, tid, err := target.ParseID(target.ID(id))
	if err == nil {
		if ctx, lerr := a.lookup(id); lerr == nil {
			err = ctx.Signal(target.Signal(sig))
		} else if tid != 0 {
			err = errnoError("signal", unix.Tgkill(pid, tid, syscall.Signal(sig)))
		} else {
			err = errnoError("signal", unix.Kill(pid, syscall.Signal(sig)))
		}
	}
	c.ReplyError(err)
}

func (p *processes) getSignalList(c *tcf.Call) {
	args := c.Args()
	_ = args.String()
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	var out []signalInfo
	for s := 1; s <= 64; s++ {
		sig := target.Signal(s)
		out = append(out, signalInfo{Code: s, Description: sig.Description(), Index: s, Name: sig.Name()})
	}
	c.Reply().Error(nil).Data(out).Send()
}

func (p *processes) getSignalMask(c *tcf.Call) {
	a := p.a
	ctx, err := a.contextArg(c)
	if err != nil {
		c.Reply().Error(err).Null().Null().Null().Send()
		return
	}
	c.Reply().Error(nil).Uint64(wireMask(ctx.DontStop())).Uint64(wireMask(ctx.DontPass())).Uint64(wireMask(ctx.Pending())).Send()
}

func (p *processes) setSignalMask(c *tcf.Call) {
	a := p.a
	args := c.Args()
	id := args.String()
	rawStop, rawPass := args.Raw(), args.Raw()
	var rawHandled json.RawMessage
	handled := args.Remaining() > 0 // sonde's pass-if-handled set (sigmasks.go)
	if handled {
		rawHandled = args.Raw()
	}
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	var m sigMasks
	var err error
	m.dontStop, err = sigSetArg("dont-stop", rawStop, target.DefaultDontStop, err)
	m.dontPass, err = sigSetArg("dont-pass", rawPass, 0, err)
	if handled {
		m.passHandled, err = sigSetArg("pass-if-handled", rawHandled, 0, err)
	}
	if err != nil {
		c.ReplyError(err)
		return
	}
	ctx, err := a.lookup(id)
	if err == nil {
		m.apply(ctx)
	}
	c.ReplyError(err)
}

func (p *processes) getEnvironment(c *tcf.Call) {
	if err := c.Args().End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).Data(os.Environ()).Send()
}

// start launches a program (the V1 service takes its options as properties).
func (p *processes) start(c *tcf.Call) {
	a := p.a
	args := c.Args()
	var req startRequest
	req.dir = args.String()
	req.exe = args.String()
	req.argv = args.Strings()
	if args.IsNull() {
		args.Raw()
		req.inheritEnv = true
	} else {
		req.env = args.Strings()
	}
	req.attach, req.stopAtEntry, req.stopAtMain = true, true, true
	if p.v1 {
		props := args.Props()
		flag := func(k string, def bool) bool {
			if v, ok := props.Bool(k); ok {
				return v
			}
			return def
		}
		req.attach = flag("Attach", true)
		req.stopAtEntry = flag("StopAtEntry", true)
		req.stopAtMain = flag("StopAtMain", true)
		req.children = flag("AttachChildren", false)
		req.terminal = flag("UseTerminal", false)
		var err error
		if req.sigs, err = startSigMasks(props); err != nil {
			c.Reply().Error(err).Null().Send()
			return
		}
	} else {
		req.attach = args.Bool()
	}
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	a.start(p.name, req, func(props *processProps, err error) {
		if err == nil && props != nil && req.attach {
			if proc, lerr := a.lookup(props.ID); lerr == nil {
				a.own.hold(c.Channel(), proc)
			}
		}
		c.Reply().Error(err).Data(props).Send()
	})
}

// getCapabilities is ProcessesV1's: which start options the agent has.
func (p *processes) getCapabilities(c *tcf.Call) {
	args := c.Args()
	if args.Remaining() > 0 {
		_ = args.String()
	}
	if err := args.End(); err != nil {
		c.Reply().Error(err).Null().Send()
		return
	}
	c.Reply().Error(nil).Data(processesCaps{true, true, true, true, true, true, true, true, true, true}).Send()
}

// processesCaps is ProcessesV1's getCapabilities answer, in the order the
// replies have always had them (the keys' order).
type processesCaps struct {
	Attach               bool `json:"Attach"`
	AttachChildren       bool `json:"AttachChildren"`
	CanTerminate         bool `json:"CanTerminate"`
	CanTerminateAttached bool `json:"CanTerminateAttached"`
	SigDontPass          bool `json:"SigDontPass"`
	SigDontStop          bool `json:"SigDontStop"`
	SigPassHandled       bool `json:"SigPassHandled"` // sonde's (sigmasks.go)
	StopAtEntry          bool `json:"StopAtEntry"`
	StopAtMain           bool `json:"StopAtMain"`
	UseTerminal          bool `json:"UseTerminal"`
}

// setWinSize is ProcessesV1's: resizes the terminal of a launched process.
func (p *processes) setWinSize(c *tcf.Call) {
	a := p.a
	args := c.Args()
	id := args.String()
	cols, rows := args.Int(), args.Int()
	if err := args.End(); err != nil {
		c.ReplyError(err)
		return
	}
	lp := a.launched.get(id)
	if lp == nil || lp.pty == nil {
		c.ReplyError(tcf.Errorf(tcf.CodeInvalidContext, "%s has no terminal", id))
		return
	}
	ws := &unix.Winsize{Col: uint16(cols), Row: uint16(rows)}
	c.ReplyError(errnoError("set window size", unix.IoctlSetWinsize(int(lp.pty.Fd()), unix.TIOCSWINSZ, ws)))
}

type startRequest struct {
	dir, exe                        string
	argv, env                       []string
	inheritEnv                      bool
	attach, stopAtEntry, stopAtMain bool
	children, terminal              bool
	sigs                            sigMasks
}

// start launches a program as a Processes start command asks and gives
// reply the command's result. For a debugged launch, reply runs before any
// event about the new process's stops can be sent (the reply queued first):
// a client learns of the process from the reply before it hears that it
// stopped at main, as with the C agent, whose single thread replies before
// it looks at the process again. (The Eclipse TCF Python client's own
// benchmark waits for the reply before it listens for that stop.)
func (a *Agent) start(service string, req startRequest, reply func(*processProps, error)) {
	props, release, err := a.launch(service, req)
	reply(props, err)
	release()
}

// launch is start's work. release lets events about the new process go to
// clients; start calls it once the reply is queued.
func (a *Agent) launch(service string, req startRequest) (props *processProps, release func(), err error) {
	if len(req.argv) == 0 {
		req.argv = []string{req.exe}
	}
	env := req.env
	if req.inheritEnv {
		env = nil
	} else if env == nil {
		env = []string{}
	}
	stdio := target.StdioPipes
	if req.terminal {
		stdio = target.StdioPty
	}
	if !req.attach {
		props, err = a.startUntraced(service, req, env)
		return props, func() {}, err
	}
	// The entry stop is where sonde sets the process up; without StopAtEntry
	// clients see neither it nor the resume after it. The listeners wait on
	// launchMu (or leave the event to the one that waits), so no stop of the
	// process reaches clients before it is marked hidden, nor before the
	// reply (release).
	a.launches.mu.Lock()
	release = a.launches.mu.Unlock
	proc, pio, err := a.target.Launch(target.LaunchOptions{
		Path: req.exe, Argv: req.argv, Env: env, Dir: req.dir,
		StopAtEntry: true, Stdio: stdio, FollowForks: req.children,
	})
	if err == nil && !req.stopAtEntry {
		a.launches.hideEntry[proc.PID()] = 2
	} else if err == nil {
		a.launches.entryStop[proc.PID()] = true
	}
	if err != nil {
		return nil, release, err
	}
	req.sigs.apply(proc)
	lp := a.attachStreams(service, proc, pio)
	a.adopt(proc)
	if req.stopAtMain {
		if err := a.stopAtMain(proc); err != nil && !req.stopAtEntry {
			// No main to stop at (a stripped program): stop at the entry
			// instead, rather than let the program run away from a client
			// that asked for control before main.
			a.log.Warn("cannot stop at main; stopping at the entry instead", "process", proc.ID(), "err", err)
			delete(a.launches.hideEntry, proc.PID())
			a.launches.entryStop[proc.PID()] = true
			req.stopAtEntry = true
		} else if err != nil {
			a.log.Warn("cannot stop at main", "process", proc.ID(), "err", err)
		}
	}
	if !req.stopAtEntry {
		if err := proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
			return nil, release, err
		}
	}
	if f := afterLaunchResume.Load(); f != nil {
		(*f)()
	}
	props, err = a.launchedContext(string(proc.ID()), req.exe, lp)
	return props, release, err
}

// afterLaunchResume, when set (by tests only), runs between a launch's
// resume and its reply: a slow reply must still come before the stop.
var afterLaunchResume atomic.Pointer[func()]

// launchedContext is the start reply's process properties; a program that
// already ran to its end is still described (from what started it).
func (a *Agent) launchedContext(id, exe string, lp *launchedProcess) (*processProps, error) {
	p, err := a.processContext(id)
	if err != nil {
		pid, _, _ := target.ParseID(target.ID(id))
		p = &processProps{ID: id, Name: exe, PID: pid, CanTerminate: true}
	}
	lp.addStreamIDs(p)
	return p, nil
}

// attachStreams makes streams of a launched program's stdio.
func (a *Agent) attachStreams(service string, proc *target.Context, pio *target.ProcessIO) *launchedProcess {
	if pio == nil {
		return nil
	}
	id := string(proc.ID())
	lp := &launchedProcess{pty: pio.Pty}
	out, errOut := pio.Stdout, pio.Stderr
	var in interface {
		Write([]byte) (int, error)
		Close() error
	} = pio.Stdin
	if pio.Pty != nil {
		out, in = pio.Pty, pio.Pty
	}
	if in != nil {
		if lp.stdin = a.streams.create(service, id); lp.stdin != nil {
			lp.stdin.w = in
		}
	}
	if out != nil {
		if lp.stdout = a.streams.create(service, id); lp.stdout != nil {
			go pump(lp.stdout, out)
		}
	}
	if errOut != nil {
		if lp.stderr = a.streams.create(service, id); lp.stderr != nil {
			go pump(lp.stderr, errOut)
		}
	}
	a.launched.put(id, lp)
	return lp
}

// startUntraced runs a program without debugging it (Attach false).
func (a *Agent) startUntraced(service string, req startRequest, env []string) (*processProps, error) {
	cmd := exec.Command(req.exe, req.argv[1:]...)
	cmd.Args = req.argv
	cmd.Env = env
	cmd.Dir = req.dir
	// Plain pipes, not cmd's: Wait closes those at exit, losing output not
	// yet read.
	inR, stdin, err1 := os.Pipe()
	stdout, outW, err2 := os.Pipe()
	stderr, errW, err3 := os.Pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		for _, f := range []*os.File{inR, stdin, stdout, outW, stderr, errW} {
			if f != nil {
				f.Close()
			}
		}
		return nil, target.Errorf(target.CodeOther, "start", "", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err := cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		stdin.Close()
		stdout.Close()
		stderr.Close()
		return nil, target.Errorf(target.CodeOther, "start", "", err)
	}
	id := string(target.ProcessID(cmd.Process.Pid))
	lp := &launchedProcess{}
	if lp.stdin = a.streams.create(service, id); lp.stdin != nil {
		lp.stdin.w = stdin
	}
	if lp.stdout = a.streams.create(service, id); lp.stdout != nil {
		go pump(lp.stdout, stdout)
	}
	if lp.stderr = a.streams.create(service, id); lp.stderr != nil {
		go pump(lp.stderr, stderr)
	}
	a.launched.put(id, lp)
	go func() {
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = -int(ws.Signal())
			} else {
				code = ee.ExitCode()
			}
		}
		a.streams.expire(a.launched.take(id))
		a.emit("Processes", "exited", id, code)
		a.emit("ProcessesV1", "exited", id, code)
	}()
	return a.launchedContext(id, req.exe, lp)
}

// stopAtMain plants a one-shot eventpoint at the program's main that stops it
// with reason "Suspended", as the C agent's StopAtMain does.
func (a *Agent) stopAtMain(proc *target.Context) error {
	addr, err := a.session.MainAddress(proc)
	if err != nil {
		return err
	}
	_, err = a.target.SetBreakpoint(proc, target.BreakpointSpec{
		Addr: addr, Internal: true,
		OnHit: func(thread *target.Context, bp *target.Breakpoint) *target.SuspendReason {
			a.target.RemoveBreakpoint(bp)
			return &target.SuspendReason{Kind: target.ReasonUser}
		},
	})
	return err
}

// processContext is a process's Processes properties; the process need not be
// debugged.
func (a *Agent) processContext(id string) (*processProps, error) {
	pid, tid, err := target.ParseID(target.ID(id))
	if err != nil || tid != 0 {
		return nil, tcf.Errorf(tcf.CodeInvalidContext, "no process %q", id)
	}
	ctx := a.target.LookupPID(pid, 0)
	var name string
	if ctx != nil {
		name = ctx.Name()
	} else {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			return nil, tcf.Errorf(tcf.CodeInvalidContext, "no process %d: %w", pid, err)
		}
		name = strings.TrimSpace(string(comm))
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
		name = exe
	}
	p := &processProps{ID: id, Name: name, PID: pid, CanTerminate: true, Attached: ctx != nil}
	lp := a.launched.get(id)
	lp.addStreamIDs(p)
	return p, nil
}

// processProps are a process's Processes properties, in the order the
// replies have always had them (the keys' order). The stream IDs are those
// of a process the agent started.
type processProps struct {
	Attached     bool   `json:"Attached"`
	CanTerminate bool   `json:"CanTerminate"`
	ID           string `json:"ID"`
	Name         string `json:"Name"`
	PID          int    `json:"PID"`
	StdErrID     string `json:"StdErrID,omitempty"`
	StdInID      string `json:"StdInID,omitempty"`
	StdOutID     string `json:"StdOutID,omitempty"`
}

// addStreamIDs adds the stdio stream IDs of a process the agent started.
func (lp *launchedProcess) addStreamIDs(p *processProps) {
	if lp == nil {
		return
	}
	for _, s := range []struct {
		id *string
		s  *stream
	}{{&p.StdInID, lp.stdin}, {&p.StdOutID, lp.stdout}, {&p.StdErrID, lp.stderr}} {
		if s.s != nil {
			*s.id = s.s.id
		}
	}
}

// On the wire a signal mask has bit n for signal n (the Index of
// getSignalList, as the C agent numbers them); target.SignalSet has bit n-1.
func wireMask(s target.SignalSet) uint64 { return uint64(s) << 1 }

func targetMask(m uint64) target.SignalSet { return target.SignalSet(m >> 1) }

func pidArg(c *tcf.Call) (int, error) {
	args := c.Args()
	id := args.String()
	if err := args.End(); err != nil {
		return 0, err
	}
	pid, tid, err := target.ParseID(target.ID(id))
	if err != nil || tid != 0 {
		return 0, tcf.Errorf(tcf.CodeInvalidContext, "no process %q", id)
	}
	return pid, nil
}

// listPIDs lists the processes of the system from /proc.
func listPIDs() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			out = append(out, pid)
		}
	}
	return out
}

func errnoError(op string, err error) error {
	if err == nil {
		return nil
	}
	return target.Errorf(target.CodeOther, op, "", err)
}

// processesEvent sends the exited event of Processes and ProcessesV1 when a
// process is gone.
func (a *Agent) processesEvent(e target.Event) {
	c := e.Context
	if e.Kind != target.EventExited || !c.IsProcess() {
		return
	}
	code := 0
	if e.Exit != nil {
		code = e.Exit.TCFCode()
	}
	id := string(c.ID())
	a.emit("Processes", "exited", id, code)
	a.emit("ProcessesV1", "exited", id, code)
}

// processGone forgets what a launch kept of a process that is gone; its
// streams expire a while later, so clients can read what it wrote last.
func (a *Agent) processGone(proc *target.Context) {
	a.launches.mu.Lock()
	delete(a.launches.hideEntry, proc.PID())
	delete(a.launches.entryStop, proc.PID())
	a.launches.mu.Unlock()
	id := string(proc.ID())
	a.streams.expire(a.launched.take(id))
}

// isEntryStop reports (once) whether a stop is the shown entry stop of a
// launched process.
func (a *Agent) isEntryStop(thread *target.Context) bool {
	if thread.IsProcess() || thread.TID() != thread.PID() {
		return false
	}
	a.launches.mu.Lock()
	defer a.launches.mu.Unlock()
	if a.launches.entryStop[thread.PID()] {
		delete(a.launches.entryStop, thread.PID())
		return true
	}
	return false
}

// hidden reports whether a stop or start of thread is one of the two events of
// a launch's entry stop that clients must not see, and counts it.
func (a *Agent) hidden(thread *target.Context) bool {
	if thread.IsProcess() || thread.TID() != thread.PID() {
		return false
	}
	a.launches.mu.Lock()
	defer a.launches.mu.Unlock()
	n := a.launches.hideEntry[thread.PID()]
	if n == 0 {
		return false
	}
	if n == 1 {
		delete(a.launches.hideEntry, thread.PID())
	} else {
		a.launches.hideEntry[thread.PID()] = n - 1
	}
	return true
}
