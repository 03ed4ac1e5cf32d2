package main

// What `sonde stack --core` says about the core beyond the stacks: how the
// process ended (gdb's "Program terminated with signal ...") and what the
// core could not provide (target/core's Problems), on stderr.

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/core"
)

// signalReport is the JSON "signal" of a core's stack: the signal that ended
// the process. Address is the faulting address ("0x…"), null for a signal
// that was sent rather than raised by a fault.
type signalReport struct {
	Number  int     `json:"number"`
	Name    string  `json:"name"`
	Code    *int32  `json:"code"`
	Address *string `json:"address"`
	// TID is the thread that took it.
	TID int `json:"tid"`
}

// coreSignal returns the signal that ended a core's process, or nil: the
// signal of the core's first thread (the one the kernel dumped first, which
// took the fatal signal), as gdb reports it. A gcore of a process gdb had
// stopped has none, as in gdb.
func coreSignal(proc *target.Context) *signalReport {
	threads := proc.Children()
	if len(threads) == 0 {
		return nil
	}
	_, r, _ := threads[0].State()
	if r == nil || r.Signal == 0 || (r.Kind != target.ReasonSignal && r.Kind != target.ReasonException) {
		return nil
	}
	s := &signalReport{Number: int(r.Signal), Name: r.Signal.Name(), TID: threads[0].TID()}
	if si := r.SigInfo; si != nil {
		code := si.Code
		s.Code = &code
		if si.HasAddr {
			a := "0x" + strconv.FormatUint(si.Addr, 16)
			s.Address = &a
		}
	}
	return s
}

// printSignal prints how the process ended, in gdb's words, with the
// faulting address where there is one.
func printSignal(w io.Writer, s *signalReport) {
	fmt.Fprintf(w, "Program terminated with signal %s, %s.\n", s.Name, gdbSignalDescription(target.Signal(s.Number)))
	if s.Address != nil {
		what := ""
		if s.Code != nil {
			what = siCodeDescription(s.Number, *s.Code)
		}
		if what != "" {
			fmt.Fprintf(w, "Fault address: %s (%s).\n", *s.Address, what)
		} else {
			fmt.Fprintf(w, "Fault address: %s.\n", *s.Address)
		}
	}
	fmt.Fprintln(w)
}

// gdbSignalDescription is gdb's description of a signal (gdb/signals.def),
// which differs from strsignal's in places ("Arithmetic exception").
func gdbSignalDescription(s target.Signal) string {
	if d, ok := gdbSignals[int(s)]; ok {
		return d
	}
	if s >= 34 && s <= 64 {
		return fmt.Sprintf("Real-time event %d", int(s))
	}
	d := s.Description()
	if d == "" {
		return "Unknown signal"
	}
	return strings.ToUpper(d[:1]) + d[1:]
}

var gdbSignals = map[int]string{
	1: "Hangup", 2: "Interrupt", 3: "Quit", 4: "Illegal instruction", 5: "Trace/breakpoint trap",
	6: "Aborted", 7: "Bus error", 8: "Arithmetic exception", 9: "Killed", 10: "User defined signal 1",
	11: "Segmentation fault", 12: "User defined signal 2", 13: "Broken pipe", 14: "Alarm clock",
	15: "Terminated", 16: "Stack fault", 17: "Child status changed", 18: "Continued",
	19: "Stopped (signal)", 20: "Stopped (user)", 21: "Stopped (tty input)", 22: "Stopped (tty output)",
	23: "Urgent I/O condition", 24: "CPU time limit exceeded", 25: "File size limit exceeded",
	26: "Virtual timer expired", 27: "Profiling timer expired", 28: "Window size changed",
	29: "I/O possible", 30: "Power fail/restart", 31: "Bad system call",
}

// siCodeDescription says what a fault's si_code means (siginfo.h), "" when
// not known.
func siCodeDescription(sig int, code int32) string {
	var names map[int32]string
	switch sig {
	case 11:
		names = map[int32]string{1: "SEGV_MAPERR, address not mapped to object", 2: "SEGV_ACCERR, invalid permissions for mapped object",
			3: "SEGV_BNDERR, failed address bound checks", 4: "SEGV_PKUERR, failed protection key checks"}
	case 7:
		names = map[int32]string{1: "BUS_ADRALN, invalid address alignment", 2: "BUS_ADRERR, nonexistent physical address",
			3: "BUS_OBJERR, object-specific hardware error", 4: "BUS_MCEERR_AR, hardware memory error consumed on a machine check"}
	case 8:
		names = map[int32]string{1: "FPE_INTDIV, integer divide by zero", 2: "FPE_INTOVF, integer overflow", 3: "FPE_FLTDIV, floating-point divide by zero",
			4: "FPE_FLTOVF, floating-point overflow", 5: "FPE_FLTUND, floating-point underflow", 6: "FPE_FLTRES, floating-point inexact result",
			7: "FPE_FLTINV, floating-point invalid operation", 8: "FPE_FLTSUB, subscript out of range"}
	case 4:
		names = map[int32]string{1: "ILL_ILLOPC, illegal opcode", 2: "ILL_ILLOPN, illegal operand", 3: "ILL_ILLADR, illegal addressing mode",
			4: "ILL_ILLTRP, illegal trap", 5: "ILL_PRVOPC, privileged opcode", 6: "ILL_PRVREG, privileged register",
			7: "ILL_COPROC, coprocessor error", 8: "ILL_BADSTK, internal stack error"}
	case 5:
		names = map[int32]string{1: "TRAP_BRKPT, process breakpoint", 2: "TRAP_TRACE, process trace trap"}
	}
	return names[code]
}

// coreProblems returns what the core behind t could not provide, for
// stderr: damaged notes and segments, missing files and files refused as not
// the ones the process mapped (naming both, one line each), then one line for
// the ranges of memory nothing can supply (how many, and the first; ranges
// of a file already reported are left out: its line says why). None for a
// live target.
func coreProblems(t *target.Target) []string {
	c := core.Of(t)
	if c == nil {
		return nil
	}
	problems := c.Problems()
	badFile := map[string]bool{}
	for _, p := range problems {
		if p.Kind == core.ProblemFileMissing || p.Kind == core.ProblemFileChanged {
			badFile[p.Path] = true
		}
	}
	var out []string
	var gaps []core.Problem
	for _, p := range problems {
		switch {
		case p.Kind == core.ProblemFileMissing || p.Kind == core.ProblemFileChanged:
			// One line per refused candidate (errors.Join's lines).
			for _, l := range strings.Split(p.Err.Error(), "\n") {
				out = append(out, "sonde: warning: "+strings.TrimPrefix(l, "core: "))
			}
			out[len(out)-1] += " (give the right file with --exe, or the crashed machine's files with --sysroot)"
		case p.Kind != core.ProblemNotDumped:
			out = append(out, "sonde: warning: "+p.String())
		case !badFile[p.Path]:
			gaps = append(gaps, p)
		}
	}
	out = append(out, refusedButFound(c.Executable())...)
	switch len(gaps) {
	case 0:
	case 1:
		out = append(out, "sonde: warning: "+gaps[0].String())
	default:
		out = append(out, fmt.Sprintf("sonde: warning: %d ranges of the process's memory are in neither the core nor a file (reads there fail); the first: %s", len(gaps), gaps[0]))
	}
	return out
}

// refusedButFound warns about candidates refused for a file that another
// candidate then stood in for: a wrong --exe, which the core's recorded
// path replaced without a word (gdb, given a wrong executable, warns that
// the core may not match it, then prints garbage).
func refusedButFound(mf *core.MappedFile) []string {
	if mf == nil || mf.Found == "" {
		return nil
	}
	var out []string
	for _, err := range mf.Rejected {
		msg := strings.TrimSuffix(strings.TrimPrefix(err.Error(), "core: "), "; not using it")
		out = append(out, fmt.Sprintf("sonde: warning: %s; using %s instead (found by %s)", msg, mf.Found, mf.How))
	}
	return out
}
