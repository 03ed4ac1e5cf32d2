package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/modules"
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/unwind"
)

func init() {
	register(verb{"stack", "print every thread's backtrace of a process or a core file", runStack})
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runStack(args []string) int {
	fs := newFlagSet("stack", "sonde stack [--json] [--no-inline] [--no-lines] [--past-main] [--debug-dir DIR]... PID\n       sonde stack --core CORE [--exe EXE] [--sysroot DIR] [same options]",
		"Prints the backtrace of every thread, like gdb's `thread apply all bt` or eu-stack.\n"+
			"A live process is stopped only while its stacks are read, then continues as it was\n"+
			"(a process that was job-control stopped stays stopped).")
	asJSON := fs.Bool("json", false, "print JSON")
	noInline := fs.Bool("no-inline", false, "do not show inlined calls as frames")
	noLines := fs.Bool("no-lines", false, "do not show source files and lines")
	pastMain := fs.Bool("past-main", false, "show the frames that call main (gdb hides them by default)")
	corePath := fs.String("core", "", "read the core file `CORE` instead of a live process")
	exe := fs.String("exe", "", "the core's executable, when it is not where the core says")
	sysroot := fs.String("sysroot", "", "look for the core's mapped files under `DIR`")
	var debugDirs multiFlag
	fs.Var(&debugDirs, "debug-dir", "also look for separate debug files in `DIR` (repeatable)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	// A short-lived command: collecting garbage less often is cheaper than
	// the memory it saves.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	timing := newPhaseTimer()
	opened, code := openTargetArgs(fs, *corePath, *exe, *sysroot)
	if opened == nil {
		return code
	}
	var closeOnce sync.Once
	release := func() { closeOnce.Do(opened.close) }
	defer release()
	timing.mark("open")
	// The user's directories first, then the system's.
	dirs := append(append([]string{}, debugDirs...), "/usr/lib/debug")
	sess := session.New(opened.target, session.Options{DebugDirs: dirs, Warn: func(m string) { fmt.Fprintln(os.Stderr, m) }})
	report := stackReport{PID: opened.process.PID()}
	for _, th := range opened.process.Children() {
		trace, err := sess.Backtrace(th, session.StackOptions{NoInline: *noInline})
		if !*pastMain {
			trace.Frames = untilMain(trace.Frames)
		}
		ts := threadReport(th, trace, err, *noLines)
		ts.live = *corePath == ""
		if regs, err := th.Registers(); err == nil {
			ts.pthread, _ = regs.DWARF(arch.DwarfFSBase)
		}
		markAddresses(sess, trace, ts.Frames, *noLines)
		gdbFiles(sess, trace, ts.Frames)
		report.Threads = append(report.Threads, ts)
	}
	timing.mark("stacks")
	// Let a live process go before formatting the output.
	release()
	timing.mark("release")
	defer timing.print()
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			fmt.Fprintf(os.Stderr, "sonde stack: %v\n", err)
			return 1
		}
		return 0
	}
	printStack(os.Stdout, report)
	return 0
}

// untilMain drops the frames that call the executable's main function
// (the C library's start-up code), as gdb's backtrace does unless told
// "set backtrace past-main on".
func untilMain(frames []unwind.StackFrame) []unwind.StackFrame {
	for i, f := range frames {
		if f.Kind != unwind.KindNormal || !f.HasSymbol || f.Symbol.Function != "main" || f.Module == nil {
			continue
		}
		if m, ok := f.Module.Client.(*modules.Module); ok && m.Main {
			return frames[:i+1]
		}
	}
	return frames
}

// The JSON shape of `sonde stack --json` (field names are a contract).
type stackReport struct {
	PID     int           `json:"pid"`
	Threads []threadStack `json:"threads"`
}

type threadStack struct {
	TID        int          `json:"tid"`
	Name       string       `json:"name"`
	StopReason string       `json:"stop_reason"`
	Error      string       `json:"error,omitempty"`
	Frames     []stackFrame `json:"frames"`
	// pthread is the thread's pthread_t (glibc: its fs base), which gdb
	// prints as "Thread 0x..."; live is false for a core (gdb prints no
	// thread names then).
	pthread uint64
	live    bool
}

type stackFrame struct {
	Index       int     `json:"index"`
	PC          string  `json:"pc"`
	Function    *string `json:"function"`
	LinkageName string  `json:"linkage_name"`
	File        *string `json:"file"`
	Line        *int    `json:"line"`
	Inlined     bool    `json:"inlined"`
	Kind        string  `json:"kind"`
	Module      string  `json:"module"`
	CFA         string  `json:"cfa,omitempty"`
	// inLibrary marks frames in a shared library (gdb says "from LIB" for
	// those when it has no line).
	inLibrary bool
	// showAddress is gdb's rule for printing "0xPC in" (see markAddresses).
	showAddress bool
}

// markAddresses applies gdb's rule for which frames print their pc: a frame
// that has inlined calls below it in the same physical frame does not (its
// location is a call site); the innermost frame of a physical frame does,
// unless its pc is exact (frame 0, or interrupted by a signal) and is the
// first address of its line-table row (with lines shown: without them there
// is no row, as for gdb without debug information).
func markAddresses(sess *session.Session, trace unwind.Trace, frames []stackFrame, noLines bool) {
	for i := range frames {
		if i >= len(trace.Frames) {
			return
		}
		f := trace.Frames[i]
		if i > 0 && trace.Frames[i-1].Physical == f.Physical {
			continue // has inlined callees
		}
		frames[i].showAddress = true
		if noLines || f.PC != f.LookupPC || f.Module == nil {
			continue
		}
		m, ok := f.Module.Client.(*modules.Module)
		if !ok {
			continue
		}
		if b, _ := sess.Binary(m); b != nil {
			if li, ok, _ := b.LineAt(f.PC - m.Bias); ok && li.Start == f.PC-m.Bias {
				frames[i].showAddress = false
			}
		}
	}
}

func threadReport(th *target.Context, trace unwind.Trace, err error, noLines bool) threadStack {
	ts := threadStack{TID: th.TID(), Name: th.Name(), Frames: []stackFrame{}}
	if err != nil {
		ts.StopReason, ts.Error = "error", err.Error()
		return ts
	}
	ts.StopReason = trace.Stop.String()
	if trace.Err != nil {
		ts.Error = trace.Err.Error()
	}
	for _, f := range trace.Frames {
		sf := stackFrame{Index: f.Index, PC: "0x" + strconv.FormatUint(f.PC, 16), Kind: f.Kind.String(),
			Inlined: f.Kind == unwind.KindInline}
		if f.Module != nil {
			sf.Module = f.Module.Name
			if m, ok := f.Module.Client.(*modules.Module); ok {
				sf.inLibrary = !m.Main
			}
		}
		if f.CFA != 0 {
			sf.CFA = "0x" + strconv.FormatUint(f.CFA, 16)
		}
		if f.HasSymbol {
			s := f.Symbol
			if s.Function != "" {
				fn := gdbName(s.Function, s.LinkageName)
				sf.Function = &fn
			}
			sf.LinkageName = s.LinkageName
			if !noLines && s.File != "" {
				file := s.File // as gdb prints it: see gdbFiles
				sf.File = &file
				if s.Line > 0 {
					line := s.Line
					sf.Line = &line
				}
			}
		}
		ts.Frames = append(ts.Frames, sf)
	}
	return ts
}

// printStack prints the report the way gdb's `thread apply all bt` does.
func printStack(w io.Writer, r stackReport) {
	// gdb numbers threads in the order it found them and prints the last first.
	for i := len(r.Threads) - 1; i >= 0; i-- {
		th := r.Threads[i]
		if i < len(r.Threads)-1 {
			fmt.Fprintln(w)
		}
		id := fmt.Sprintf("LWP %d", th.TID)
		if th.pthread != 0 {
			id = fmt.Sprintf("Thread %#x (LWP %d)", th.pthread, th.TID)
		}
		if th.Name != "" && th.live {
			fmt.Fprintf(w, "Thread %d (%s \"%s\"):\n", i+1, id, th.Name)
		} else {
			fmt.Fprintf(w, "Thread %d (%s):\n", i+1, id)
		}
		for _, f := range th.Frames {
			fmt.Fprintln(w, frameLine(f))
		}
		if th.Error != "" && th.StopReason != "outermost" {
			fmt.Fprintf(w, "Backtrace stopped: %s: %s\n", th.StopReason, th.Error)
		}
	}
}

func frameLine(f stackFrame) string {
	if f.Kind == "signal" {
		return fmt.Sprintf("#%-2d <signal handler called>", f.Index)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#%-2d ", f.Index)
	pc, _ := strconv.ParseUint(strings.TrimPrefix(f.PC, "0x"), 16, 64)
	if f.showAddress {
		fmt.Fprintf(&b, "0x%016x in ", pc)
	}
	name := "??"
	if f.Function != nil {
		name = *f.Function
	}
	b.WriteString(name)
	if !strings.HasSuffix(name, ")") {
		b.WriteString(" ()")
	}
	switch {
	case f.File != nil && f.Line != nil:
		fmt.Fprintf(&b, " at %s:%d", *f.File, *f.Line)
	case f.File != nil:
		fmt.Fprintf(&b, " at %s", *f.File)
	case f.inLibrary:
		fmt.Fprintf(&b, " from %s", f.Module)
	}
	return b.String()
}

// gdbFiles rewrites the frames' source paths into the form gdb prints
// (stack_units.go), from each frame's compilation unit.
func gdbFiles(sess *session.Session, trace unwind.Trace, frames []stackFrame) {
	for i := range frames {
		if frames[i].File == nil || i >= len(trace.Frames) {
			continue
		}
		f := trace.Frames[i]
		var u *unitInfo
		if f.Module != nil {
			if m, ok := f.Module.Client.(*modules.Module); ok {
				if b, _ := sess.Binary(m); b != nil {
					u = unitsOf(b).unit(f.LookupPC - m.Bias)
				}
			}
		}
		file := *frames[i].File
		if u != nil {
			file = gdbSourceFile(file, u)
		} else {
			file = gdbFile(file)
		}
		frames[i].File = &file
	}
}

// gdbFile turns a source path as symbols gives it (the compilation directory,
// the line table's directory and the file name joined, as addr2line prints
// it) into the form gdb's bt prints for the commonest case it differs: a
// relative compilation directory such as glibc's "./time" in front of a
// relative directory entry ("./time/../sysdeps/x.c" is "../sysdeps/x.c" in
// gdb). Other paths are printed as they are.
func gdbFile(path string) string {
	rest, ok := strings.CutPrefix(path, "./")
	if !ok {
		return path
	}
	dir, after, ok := strings.Cut(rest, "/")
	if !ok || dir == "" || dir == "." || dir == ".." || !strings.HasPrefix(after, "../") {
		return path
	}
	return after
}

// gdbName is the name gdb's bt prints for a function: for C++ (a mangled
// linkage name), the demangled name without its parameter list and
// qualifiers — "ns::C::~C" for "ns::C::~C()", "f<int>" for "f<int>(int) const".
func gdbName(name, linkage string) string {
	if !strings.HasPrefix(linkage, "_Z") || !strings.HasSuffix(strings.TrimRight(name, " &constvolatile"), ")") {
		return name
	}
	end := len(strings.TrimRight(name, " &constvolatile"))
	depth := 0
	for i := end - 1; i >= 0; i-- {
		switch name[i] {
		case ')':
			depth++
		case '(':
			depth--
			if depth == 0 {
				if i == 0 {
					return name
				}
				return name[:i]
			}
		}
	}
	return name
}

// phaseTimer prints how long each phase of a command took to stderr when
// SONDE_TIMING is set (attach, unwinding and symbols, release).
type phaseTimer struct {
	on    bool
	last  time.Time
	lines []string
}

func newPhaseTimer() *phaseTimer {
	return &phaseTimer{on: os.Getenv("SONDE_TIMING") != "", last: time.Now()}
}

func (p *phaseTimer) mark(phase string) {
	if !p.on {
		return
	}
	now := time.Now()
	p.lines = append(p.lines, fmt.Sprintf("sonde: %-8s %6.2f ms", phase, float64(now.Sub(p.last).Microseconds())/1000))
	p.last = now
}

func (p *phaseTimer) print() {
	for _, l := range p.lines {
		fmt.Fprintln(os.Stderr, l)
	}
}
