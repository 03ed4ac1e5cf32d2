package dap

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	godap "github.com/google/go-dap"

	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/core"
	"github.com/sondedbg/sonde/target/ptrace"
)

// debuggee is the program one client debugs: a launched or attached live
// process, or a core file.
type debuggee struct {
	s       *Server
	tgt     *target.Target
	sess    *session.Session
	proc    *target.Context
	program string
	// eventProc is proc for the event listener, which runs on the target's
	// event goroutine while launch or attach sets proc (see setProc).
	eventProc atomic.Pointer[target.Context]

	launched    bool // started by us: ended with the session unless told otherwise
	core        bool // read-only
	stopOnEntry bool
	args        launchArgs // for restart

	// hinted: the files whose debug-information hint was written (hints.go).
	hintMu sync.Mutex
	hinted map[*session.Module]bool

	configured atomic.Bool
	exited     atomic.Bool
	output     sync.WaitGroup // program stdout/stderr readers
	endOnce    sync.Once

	// pausing is the thread a pause request named, while its stop is
	// awaited; the other threads' stops of the same suspend are not shown.
	pauseMu  sync.Mutex
	pausing  map[*target.Context]bool
	pauseFor *target.Context
	// announced are the threads a thread event was sent for.
	announced map[*target.Context]bool
}

// initialize answers with what sonde really supports.
func (s *Server) initialize(r *request) (any, error) {
	if err := r.decode(&s.client); err != nil {
		return nil, err
	}
	caps := godap.Capabilities{
		SupportsConfigurationDoneRequest:   true,
		SupportsFunctionBreakpoints:        true,
		SupportsConditionalBreakpoints:     true,
		SupportsHitConditionalBreakpoints:  true,
		SupportsEvaluateForHovers:          true,
		SupportsSetVariable:                true,
		SupportsSetExpression:              true,
		SupportsRestartRequest:             true,
		SupportsTerminateRequest:           true,
		SupportTerminateDebuggee:           true,
		SupportsLogPoints:                  true,
		SupportsReadMemoryRequest:          true,
		SupportsWriteMemoryRequest:         true,
		SupportsDisassembleRequest:         true,
		SupportsInstructionBreakpoints:     true,
		SupportsSteppingGranularity:        true,
		SupportsDataBreakpoints:            true,
		SupportsModulesRequest:             true,
		SupportsLoadedSourcesRequest:       true,
		SupportsExceptionInfoRequest:       true,
		SupportsCompletionsRequest:         true,
		SupportsStepInTargetsRequest:       true,
		SupportsValueFormattingOptions:     true,
		SupportsDelayedStackTraceLoading:   true,
		SupportsExceptionFilterOptions:     false,
		SupportsExceptionOptions:           false,
		SupportsClipboardContext:           false,
		SupportsGotoTargetsRequest:         false,
		SupportsStepBack:                   false,
		SupportsRestartFrame:               false,
		SupportsCancelRequest:              false,
		SupportsBreakpointLocationsRequest: false,
		SupportsTerminateThreadsRequest:    false,
		ExceptionBreakpointFilters:         exceptionFilters,
	}
	return caps, nil
}

// envList is a launch environment: lldb-dap's array of "VAR=VALUE"
// strings, or an object of names to values.
type envList []string

func (e *envList) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		for _, kv := range list {
			if !strings.Contains(kv, "=") {
				return fmt.Errorf("env entry %q is not VAR=VALUE", kv)
			}
		}
		*e = list
		return nil
	}
	var obj map[string]*string
	if err := json.Unmarshal(b, &obj); err != nil {
		return fmt.Errorf(`env must be an array of "VAR=VALUE" strings or an object of strings`)
	}
	out := make([]string, 0, len(obj))
	for k, v := range obj {
		if v == nil {
			continue
		}
		out = append(out, k+"="+*v)
	}
	*e = out
	return nil
}

// launchArgs are lldb-dap's launch arguments (others, such as name, type
// and request, are ignored).
type launchArgs struct {
	Program     string   `json:"program"`
	Args        []string `json:"args"`
	Cwd         string   `json:"cwd"`
	Env         envList  `json:"env"`
	StopOnEntry bool     `json:"stopOnEntry"`
	DebugDirs   []string `json:"debugDirs"`
	Sysroot     string   `json:"sysroot"`
	NoDebug     bool     `json:"noDebug"`
	// RunInTerminal (lldb-dap) or console "integratedTerminal" /
	// "externalTerminal" start the program in the client's terminal.
	RunInTerminal bool   `json:"runInTerminal"`
	Console       string `json:"console"`
	// DisableASLR (lldb-dap's, default true, as gdb's disable-randomization):
	// the program's addresses are those of every run, and gdb's.
	DisableASLR *bool `json:"disableASLR"`
}

// pidArg accepts a process ID as a number or a numeric string (editors'
// process pickers give strings).
type pidArg int

func (p *pidArg) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*p = pidArg(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("pid must be a process ID")
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("pid %q is not a process ID", s)
	}
	*p = pidArg(n)
	return nil
}

type attachArgs struct {
	PID       pidArg   `json:"pid"`
	Program   string   `json:"program"`
	CoreFile  string   `json:"coreFile"`
	Sysroot   string   `json:"sysroot"`
	DebugDirs []string `json:"debugDirs"`
}

func (s *Server) newSession(t *target.Target, debugDirs []string) *session.Session {
	dirs := append(append([]string(nil), debugDirs...), s.opts.DebugDirs...)
	return session.New(t, session.Options{DebugDirs: dirs, Warn: func(msg string) {
		if sessionWarning(msg) {
			s.output("console", msg+"\n")
		}
	}})
}

func (s *Server) launch(r *request) (any, error) {
	var a launchArgs
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	if _, err := s.current(); err == nil {
		return nil, errorf("a program is already being debugged")
	}
	d, err := s.start(a)
	if err != nil {
		return nil, err
	}
	return withAfter{then: func() {
		s.processEvent(d, "launch")
		s.sendEvent("initialized", nil)
	}}, nil
}

// start launches a program, stopped at its first instruction until
// configurationDone.
func (s *Server) start(a launchArgs) (*debuggee, error) {
	if a.Program == "" {
		return nil, errorf("launch: program is missing")
	}
	prog := a.Program
	if a.Cwd != "" && !filepath.IsAbs(prog) && strings.Contains(prog, "/") {
		prog = filepath.Join(a.Cwd, prog)
	}
	if strings.Contains(prog, "/") {
		if _, err := os.Stat(prog); err != nil {
			return nil, errorf("launch: program %q: %v", a.Program, err)
		}
	}
	if (a.RunInTerminal || strings.HasSuffix(a.Console, "Terminal")) && s.client.SupportsRunInTerminalRequest {
		return s.startInTerminal(a, prog)
	}
	env := os.Environ()
	if len(a.Env) > 0 {
		env = mergeEnv(env, a.Env)
	}
	t, err := ptrace.New()
	if err != nil {
		return nil, errorf("launch: %v", err)
	}
	d := &debuggee{s: s, tgt: t, program: prog, launched: true, stopOnEntry: a.StopOnEntry, args: a}
	d.listen()
	// The session first, to read ahead the symbols the first stop needs
	// while the program is started (the fork, exec and stop at its entry
	// take as long as the C library's unit index on a loaded machine).
	d.sess = s.newSession(t, a.DebugDirs)
	go pprof.Do(context.Background(), pprof.Labels("req", "PrepareSymbols"), func(context.Context) {
		d.sess.PrepareSymbols(prog, env)
		warmJSON()
	})
	argv := append([]string{prog}, a.Args...)
	proc, pio, err := t.Launch(target.LaunchOptions{Path: prog, Argv: argv, Env: env, Dir: a.Cwd,
		StopAtEntry: true, Stdio: target.StdioPipes, DisableASLR: a.DisableASLR == nil || *a.DisableASLR})
	if err != nil {
		t.Close()
		return nil, errorf("launch %s: %v", a.Program, err)
	}
	d.setProc(proc)
	d.sess.OnModulesChanged(d.modulesChanged)
	if err := d.sess.TrackModules(proc, false); err != nil {
		s.output("console", fmt.Sprintf("sonde: not following library loads: %v\n", err))
	}
	if pio != nil {
		if pio.Stdin != nil {
			pio.Stdin.Close()
		}
		d.copyOutput(pio.Stdout, "stdout")
		d.copyOutput(pio.Stderr, "stderr")
	}
	s.mu.Lock()
	s.dbg = d
	s.mu.Unlock()
	s.bps.replantAll(d)
	return d, nil
}

// mergeEnv overrides base with the client's VAR=VALUE entries.
func mergeEnv(base, over []string) []string {
	idx := map[string]int{}
	out := append([]string(nil), base...)
	for i, kv := range out {
		k, _, _ := strings.Cut(kv, "=")
		idx[k] = i
	}
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
		} else {
			idx[k] = len(out)
			out = append(out, kv)
		}
	}
	return out
}

// copyOutput turns one of the program's streams into output events.
func (d *debuggee) copyOutput(r io.ReadCloser, category string) {
	if r == nil {
		return
	}
	d.output.Add(1)
	go func() {
		defer d.output.Done()
		defer r.Close()
		br := bufio.NewReaderSize(r, 32<<10)
		buf := make([]byte, 32<<10)
		for {
			n, err := br.Read(buf)
			if n > 0 {
				d.s.output(category, string(buf[:n]))
			}
			if err != nil {
				return
			}
		}
	}()
}

func (s *Server) attach(r *request) (any, error) {
	var a attachArgs
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	if _, err := s.current(); err == nil {
		return nil, errorf("a program is already being debugged")
	}
	var d *debuggee
	var err error
	method := "attach"
	switch {
	case a.CoreFile != "":
		d, err = s.openCore(a)
		method = "attachForSuspendedLaunch"
	case a.PID > 0:
		d, err = s.attachPID(a)
	default:
		return nil, errorf("attach: give pid (a running process) or coreFile (a core dump, with program)")
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.dbg = d
	s.mu.Unlock()
	s.bps.replantAll(d)
	return withAfter{then: func() {
		s.processEvent(d, method)
		s.sendEvent("initialized", nil)
	}}, nil
}

func (s *Server) attachPID(a attachArgs) (*debuggee, error) {
	t, err := ptrace.New()
	if err != nil {
		return nil, errorf("attach: %v", err)
	}
	d := &debuggee{s: s, tgt: t}
	d.listen()
	proc, err := t.Attach(int(a.PID), target.AttachOptions{Stop: true})
	if err != nil {
		t.Close()
		return nil, errorf("attach to process %d: %v", a.PID, err)
	}
	d.setProc(proc)
	d.program = a.Program
	if exe, err := proc.Executable(); err == nil && d.program == "" {
		d.program = exe
	}
	d.sess = s.newSession(t, a.DebugDirs)
	d.sess.OnModulesChanged(d.modulesChanged)
	if err := d.sess.TrackModules(proc, false); err != nil {
		s.output("console", fmt.Sprintf("sonde: not following library loads: %v\n", err))
	}
	return d, nil
}

func (s *Server) openCore(a attachArgs) (*debuggee, error) {
	t, err := core.Open(a.CoreFile, core.Options{Executable: a.Program, Sysroot: a.Sysroot})
	if err != nil {
		return nil, errorf("core file %s: %v", a.CoreFile, err)
	}
	procs := t.Processes()
	if len(procs) == 0 {
		t.Close()
		return nil, errorf("core file %s holds no process", a.CoreFile)
	}
	d := &debuggee{s: s, tgt: t, proc: procs[0], core: true, program: a.Program}
	if d.program == "" {
		d.program, _ = d.proc.Executable()
	}
	d.sess = s.newSession(t, a.DebugDirs)
	return d, nil
}

func (s *Server) processEvent(d *debuggee, method string) {
	name := d.program
	if name == "" {
		name = d.proc.Name()
	}
	s.sendEvent("process", godap.ProcessEventBody{Name: name, SystemProcessId: d.proc.PID(),
		IsLocalProcess: true, StartMethod: method, PointerSize: 64})
}

// configurationDone lets the program run: a launched one from its first
// instruction (or a stopped event at entry with stopOnEntry), an attached
// one on as it was. A core shows its crashed thread.
func (s *Server) configurationDone(r *request) (any, error) {
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	if d.configured.Swap(true) {
		return nil, nil
	}
	for _, th := range d.proc.Children() {
		d.threadStarted(th)
	}
	switch {
	case d.core:
		return withAfter{then: d.showCoreStop}, nil
	case d.launched && d.stopOnEntry:
		return withAfter{then: func() {
			s.sendEvent("stopped", godap.StoppedEventBody{Reason: "entry", ThreadId: d.proc.PID(), AllThreadsStopped: true})
		}}, nil
	}
	if err := d.proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		return nil, errorf("run: %v", err)
	}
	return nil, nil
}

// showCoreStop reports the thread the core was dumped for as stopped.
func (d *debuggee) showCoreStop() {
	threads := d.proc.Children()
	if len(threads) == 0 {
		return
	}
	th := threads[0]
	_, reason, _ := th.State()
	body := godap.StoppedEventBody{Reason: "exception", ThreadId: th.TID(), AllThreadsStopped: true}
	if reason != nil && reason.Signal != 0 {
		body.Description = "signal " + reason.Signal.Name()
		body.Text = reason.Signal.Name() + ": " + reason.Signal.Description()
	} else {
		body.Reason = "pause"
	}
	d.s.sendEvent("stopped", body)
}

type disconnectArgs struct {
	Restart           bool  `json:"restart"`
	TerminateDebuggee *bool `json:"terminateDebuggee"`
	SuspendDebuggee   bool  `json:"suspendDebuggee"`
}

// disconnect ends the session: a launched program is killed unless
// terminateDebuggee is false; an attached one is detached (left running,
// untraced) unless terminateDebuggee is true.
func (s *Server) disconnect(r *request) (any, error) {
	var a disconnectArgs
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	s.mu.Lock()
	d := s.dbg
	s.dbg = nil
	s.done = true
	s.mu.Unlock()
	if d != nil {
		kill := d.launched
		if a.TerminateDebuggee != nil {
			kill = *a.TerminateDebuggee
		}
		d.end(kill)
	}
	return nil, nil
}

// terminate kills the program; exited and terminated events follow.
func (s *Server) terminate(r *request) (any, error) {
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	if d.core {
		d.exited.Store(true)
		return withAfter{then: func() { s.sendEvent("terminated", nil) }}, nil
	}
	if d.proc.Exited() {
		return nil, nil
	}
	if err := d.proc.Terminate(); err != nil {
		return nil, errorf("terminate: %v", err)
	}
	return nil, nil
}

// restart kills a launched program and starts it again with the same
// arguments and breakpoints; it runs at once (the configuration is done).
func (s *Server) restart(r *request) (any, error) {
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	if !d.launched {
		return nil, errorf("restart: only a launched program can be restarted")
	}
	s.mu.Lock()
	s.dbg = nil
	s.mu.Unlock()
	d.exited.Store(true) // its exit is not the session's end
	d.end(true)
	s.handles.reset()
	nd, err := s.start(d.args)
	if err != nil {
		return nil, err
	}
	nd.configured.Store(true)
	for _, th := range nd.proc.Children() {
		nd.threadStarted(th)
	}
	if err := nd.proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		return nil, errorf("restart: %v", err)
	}
	return withAfter{then: func() { s.processEvent(nd, "launch") }}, nil
}

// end releases the target: kill (launched programs) or detach, idempotent.
func (d *debuggee) end(kill bool) {
	d.endOnce.Do(func() {
		if kill && !d.core && d.proc != nil && !d.proc.Exited() {
			d.proc.Terminate()
			for i := 0; i < 200 && !d.proc.Exited(); i++ {
				time.Sleep(5 * time.Millisecond)
			}
		}
		d.tgt.Close()
		d.s.bps.forget(d)
	})
}

// setProc records the debuggee's process, for the handlers and for the
// event listener (which may already be running).
func (d *debuggee) setProc(proc *target.Context) {
	d.proc = proc
	d.eventProc.Store(proc)
}
