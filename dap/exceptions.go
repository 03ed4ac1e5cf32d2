package dap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	godap "github.com/google/go-dap"
	"github.com/ianlancetaylor/demangle"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/ptrace"
	"golang.org/x/sys/unix"
)

// Exception breakpoints: C++ throw and catch are breakpoints on the C++
// runtime's __cxa_throw and __cxa_begin_catch (planted when libstdc++
// loads), a Rust panic one on the standard library's rust_panic (the
// function every panic that unwinds or aborts passes through, after the
// panic hook printed its message); signals stop the program unless the "signals" filter is off,
// and even then a signal that would kill it stops (signalsOff).

var exceptionFilters = []godap.ExceptionBreakpointsFilter{
	{Filter: "cpp_throw", Label: "C++: on throw", Description: "Stop when a C++ exception is thrown (__cxa_throw)"},
	{Filter: "cpp_catch", Label: "C++: on catch", Description: "Stop when a C++ exception is caught (__cxa_begin_catch)"},
	{Filter: "rust_panic", Label: "Rust: on panic", Description: "Stop when a Rust program panics (rust_panic)"},
	{Filter: "signals", Label: "Signals", Description: "Stop when the program receives a signal (SIGCHLD, SIGPIPE, SIGWINCH and SIGCONT pass); off, stop only on a signal that would kill the program", Default: true},
}

var exceptionFunctions = map[string]string{
	"cpp_throw":  "__cxa_throw",
	"cpp_catch":  "__cxa_begin_catch",
	"rust_panic": "rust_panic",
}

// exceptionText names the exception a stop at kind's breakpoint reports:
// its id for exceptionInfo and the stopped event's description.
func exceptionText(kind string) (id, text string) {
	switch kind {
	case "rust_panic":
		return "Rust panic", "Rust panic"
	case "cpp_catch":
		return "C++ exception", "C++ exception caught"
	}
	return "C++ exception", "C++ exception " + strings.TrimPrefix(kind, "cpp_")
}

func (s *Server) setExceptionBreakpoints(r *request) (any, error) {
	var a godap.SetExceptionBreakpointsArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, _ := s.current()
	s.bps.mu.Lock()
	old := s.bps.excepts
	s.bps.excepts = nil
	s.bps.mu.Unlock()
	for _, cb := range old {
		d.unplant(cb)
	}
	filters := append([]string(nil), a.Filters...)
	for _, fo := range a.FilterOptions {
		filters = append(filters, fo.FilterId)
	}
	var list []*clientBreakpoint
	out := []godap.Breakpoint{}
	signals := false
	for _, f := range filters {
		switch {
		case f == "signals":
			signals = true
			out = append(out, godap.Breakpoint{Verified: true})
		case exceptionFunctions[f] != "":
			cb := s.bps.newBP(kindException)
			cb.name = f
			d.plant(cb)
			list = append(list, cb)
			out = append(out, s.bps.view(cb))
		default:
			out = append(out, godap.Breakpoint{Verified: false, Message: fmt.Sprintf("unknown exception filter %q", f)})
		}
	}
	s.bps.mu.Lock()
	s.bps.excepts = list
	s.bps.mu.Unlock()
	if d != nil && !d.core {
		// SIGCONT passes too: it is how a job-control stop ends (and how
		// a program run in the client's terminal is let go).
		stop := target.DefaultDontStop.With(target.Signal(unix.SIGCONT))
		var passHandled target.SignalSet
		if !signals {
			stop, passHandled = signalsOff(stop)
		}
		// A SIGTRAP not sonde's own (raise(SIGTRAP), an int3 compiled into
		// the program) stops and is swallowed on continue, as gdb and lldb
		// do: the program goes on past its trap instead of dying of it.
		d.proc.SetSignalMasks(stop, d.proc.DontPass().With(target.Signal(unix.SIGTRAP)))
		d.proc.SetPassHandled(passHandled)
	}
	return godap.SetExceptionBreakpointsResponseBody{Breakpoints: out}, nil
}

// signalsOff returns the don't-stop and pass-if-handled sets for the
// "signals" filter off, from the don't-stop set it has on: a signal that
// would kill the program (no handler, not ignored, a default action that
// terminates) still stops, as in lldb and gdb, so a crash is seen where it
// happens; the others pass. SIGTRAP and SIGSTOP stay the debugger's, and
// SIGKILL cannot be intercepted.
func signalsOff(stop target.SignalSet) (dontStop, passHandled target.SignalSet) {
	for sig := target.Signal(1); sig <= 64; sig++ {
		switch {
		case sig == target.Signal(unix.SIGTRAP) || sig == target.Signal(unix.SIGSTOP) || sig == target.Signal(unix.SIGKILL):
		case stop.Has(sig):
		case target.DefaultTerminating.Has(sig):
			passHandled = passHandled.With(sig)
		default:
			stop = stop.With(sig)
		}
	}
	return stop, passHandled
}

func (s *Server) exceptionInfo(r *request) (any, error) {
	var a godap.ExceptionInfoArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	th, err := d.thread(a.ThreadId)
	if err != nil {
		return nil, err
	}
	_, reason, _ := th.State()
	if reason == nil {
		return nil, errorf("thread %d is not stopped by an exception", a.ThreadId)
	}
	body := godap.ExceptionInfoResponseBody{BreakMode: "always"}
	switch {
	case reason.Signal != 0:
		body.ExceptionId = reason.Signal.Name()
		body.Description = reason.Signal.Description()
		if reason.Message != "" {
			body.Description = reason.Message
		} else if si := reason.SigInfo; si != nil && si.HasAddr {
			body.Description += fmt.Sprintf(" at address 0x%x", si.Addr)
		}
		if name := reason.Signal.Name(); !strings.Contains(body.Description, name) {
			body.Description = name + ": " + body.Description
		}
		body.Description += signalFate(th, reason.Signal)
	case reason.Kind == target.ReasonBreakpoint:
		kind := ""
		s.bps.mu.Lock()
		for _, tb := range reason.Breakpoints {
			if cb := s.bps.byPlanted[tb]; cb != nil && cb.kind == kindException {
				kind = cb.name
			}
		}
		s.bps.mu.Unlock()
		if kind == "" {
			return nil, errorf("thread %d is not stopped by an exception", a.ThreadId)
		}
		body.ExceptionId, body.Description = exceptionText(kind)
		if kind == "cpp_throw" {
			if name := thrownType(th); name != "" {
				body.ExceptionId = name
				body.Description = "C++ exception of type " + name + " thrown"
			}
		}
	default:
		body.ExceptionId = reason.Kind.String()
		body.Description = reason.Message
	}
	return body, nil
}

// signalFate says what continuing from a signal stop does, from the
// process's dispositions now: the handler runs, the signal is ignored, or
// the program ends. Empty when the backend cannot tell.
func signalFate(th *target.Context, sig target.Signal) string {
	if p := th.Process(); p != nil && p.DontPass().Has(sig) {
		return " (not delivered: continuing goes on past it)"
	}
	d, err := th.SignalDispositions()
	switch {
	case err != nil:
		return ""
	case d.Caught.Has(sig):
		return " (the program's handler runs on continue)"
	case d.Ignored.Has(sig):
		return " (the program ignores it)"
	case d.Fatal(sig):
		return " (no handler: continuing delivers it and ends the program)"
	}
	return ""
}

// exceptionStopText describes a stop at a C++ exception breakpoint: the
// type thrown at a throw, the catch at a catch.
func (s *Server) exceptionStopText(th *target.Context, reason *target.SuspendReason) string {
	kind := ""
	s.bps.mu.Lock()
	for _, tb := range reason.Breakpoints {
		if cb := s.bps.byPlanted[tb]; cb != nil && cb.kind == kindException {
			kind = cb.name
		}
	}
	s.bps.mu.Unlock()
	if kind == "cpp_throw" {
		if name := thrownType(th); name != "" {
			return "C++ exception of type " + name + " thrown"
		}
	}
	_, text := exceptionText(kind)
	return text
}

// thrownType reads the mangled type name of the exception a thread stopped
// at __cxa_throw is throwing: its second argument is the std::type_info,
// whose second word points to the name.
func thrownType(th *target.Context) string {
	regs, err := th.GeneralRegisters()
	if err != nil {
		return ""
	}
	tinfo, err := regs.DWARF(4) // rsi
	if err != nil || tinfo == 0 {
		return ""
	}
	var w [8]byte
	if n, _ := th.ReadMemory(tinfo+8, w[:]); n != 8 {
		return ""
	}
	var name [256]byte
	n, _ := th.ReadMemory(binary.LittleEndian.Uint64(w[:]), name[:])
	s := name[:n]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	mangled := strings.TrimPrefix(string(s), "*")
	// The name is mangled (St13runtime_error): a typeinfo name's
	// demangling is "typeinfo name for std::runtime_error".
	if d, err := demangle.ToString("_ZTS" + mangled); err == nil {
		return strings.TrimPrefix(d, "typeinfo name for ")
	}
	return mangled
}

// Data breakpoints are hardware watchpoints on data with an address: a
// variable (or an expression) of 1, 2, 4 or 8 bytes, aligned.

func (s *Server) dataBreakpointInfo(r *request) (any, error) {
	var a godap.DataBreakpointInfoArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, err := s.current()
	if err != nil {
		return nil, err
	}
	no := func(why string) (any, error) {
		return godap.DataBreakpointInfoResponseBody{DataId: nil, Description: why}, nil
	}
	if d.core {
		return no("a core file cannot run")
	}
	text := a.Name
	var fe *frameEnv
	if a.VariablesReference != 0 {
		h, ok := s.handles.variable(a.VariablesReference)
		if !ok {
			return no("the variable's container is gone")
		}
		if fe, err = s.handleEnv(d, h); err != nil {
			return no(err.Error())
		}
		if text, err = s.childExpr(h, fe, a.Name); err != nil {
			return no(err.Error())
		}
	} else {
		if fe, _, err = s.evalEnv(d, a.FrameId); err != nil {
			return no(err.Error())
		}
	}
	res, err := evalText(text, fe)
	if err != nil {
		return no(err.Error())
	}
	size := res.Type.ByteSize()
	if !res.HasAddress {
		return no(text + " is not in memory")
	}
	switch size {
	case 1, 2, 4, 8:
	default:
		return no(fmt.Sprintf("%s is %d bytes: a watchpoint covers 1, 2, 4 or 8", text, size))
	}
	if res.Address%uint64(size) != 0 {
		return no(fmt.Sprintf("%s at 0x%x is not aligned to its size", text, res.Address))
	}
	id := fmt.Sprintf("0x%x/%d", res.Address, size)
	desc := fmt.Sprintf("%s (%d bytes at 0x%x)", text, size, res.Address)
	if errors.Is(ptrace.WatchpointsTrap(), ptrace.ErrNoWatchTrap) {
		desc += ": " + ptrace.ErrNoWatchTrap.Error()
	}
	return godap.DataBreakpointInfoResponseBody{DataId: id, Description: desc,
		AccessTypes: []godap.DataBreakpointAccessType{"write", "readWrite"}, CanPersist: false}, nil
}

func parseDataID(id string) (uint64, int, error) {
	a, sz, ok := strings.Cut(id, "/")
	if !ok {
		return 0, 0, fmt.Errorf("data id %q is not ADDRESS/SIZE", id)
	}
	addr, err := parseAddr(a)
	if err != nil {
		return 0, 0, err
	}
	n, err := strconv.Atoi(sz)
	if err != nil {
		return 0, 0, fmt.Errorf("data id %q is not ADDRESS/SIZE", id)
	}
	return addr, n, nil
}

func (s *Server) setDataBreakpoints(r *request) (any, error) {
	var a godap.SetDataBreakpointsArguments
	if err := r.decode(&a); err != nil {
		return nil, err
	}
	d, _ := s.current()
	out := s.replaceBreakpoints(d, s.bps.swapper(&s.bps.data), len(a.Breakpoints), func(i int) *clientBreakpoint {
		w := a.Breakpoints[i]
		cb := s.bps.newBP(kindData)
		cb.name, cb.cond, cb.hitCond = w.DataId, w.Condition, w.HitCondition
		addr, size, err := parseDataID(w.DataId)
		switch {
		case err != nil:
			cb.message = err.Error()
		case w.AccessType == "read":
			cb.message = "x86 cannot watch reads alone: use readWrite"
		case d != nil && !d.core && errors.Is(ptrace.WatchpointsTrap(), ptrace.ErrNoWatchTrap):
			// Planted, it would be accepted and never stop: say so.
			cb.message = ptrace.ErrNoWatchTrap.Error()
		default:
			cb.addr, cb.size, cb.access = addr, size, target.AccessWrite
			if w.AccessType == "readWrite" {
				cb.access = target.AccessReadWrite
			}
			d.plant(cb)
		}
		return cb
	})
	return godap.SetDataBreakpointsResponseBody{Breakpoints: out}, nil
}
