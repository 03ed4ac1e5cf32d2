package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sondedbg/sonde/arch"
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
	fs := newFlagSet("stack", "sonde stack [--json] [--no-inline] [--no-lines] [--past-main] [--full] [--raw] [--no-args] [-t TID] [--debug-dir DIR]... [-p] PID\n       sonde stack --core CORE [--exe EXE] [--sysroot DIR] [same options]",
		"Prints the backtrace of every thread, like gdb's `thread apply all bt` or eu-stack.\n"+
			"A live process is stopped only while its stacks are read, then continues as it was\n"+
			"(a process that was job-control stopped stays stopped).")
	asJSON := fs.Bool("json", false, "print JSON")
	noInline := fs.Bool("no-inline", false, "do not show inlined calls as frames")
	noLines := fs.Bool("no-lines", false, "do not show source files and lines")
	pastMain := fs.Bool("past-main", false, "show the frames that call main (gdb hides them by default)")
	full := fs.Bool("full", false, "also print every frame's local variables (gdb's bt full)")
	noArgs := fs.Bool("no-args", false, "do not read the frames' arguments")
	raw := fs.Bool("raw", false, "print library types (std::map, Rust's HashMap, ...) as their members, as gdb does without its pretty-printers")
	corePath := fs.String("core", "", "read the core file `CORE` instead of a live process")
	exe := fs.String("exe", "", "the core's executable, when it is not where the core says")
	sysroot := fs.String("sysroot", "", "look for the core's mapped files under `DIR`")
	var debugDirs multiFlag
	fs.Var(&debugDirs, "debug-dir", "also look for separate debug files in `DIR` (repeatable)")
	onlyTID := fs.Int("t", 0, "show only the thread `TID` (a thread id, as in LWP TID)")
	fs.String("p", "", "the process `PID`, as gdb -p and eu-stack -p take it (or PID as the argument)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	// A short-lived command: collecting garbage less often is cheaper than
	// the memory it saves.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	timing := newPhaseTimer()
	// The user's directories first, then the system's.
	dirs := debugDirsFor(debugDirs, *sysroot)
	// Debug-information warnings: for the files in the output only (stack_hints.go).
	var sess *session.Session
	opened, code := openTargetArgs(fs, *corePath, *exe, *sysroot, func(t *target.Target) {
		sess = session.New(t, session.Options{DebugDirs: dirs})
		prepareStack(sess, *corePath, fs.Arg(0), !*noArgs || *full)
	})
	if opened == nil {
		return code
	}
	var closeOnce sync.Once
	release := func() { closeOnce.Do(opened.close) }
	defer release()
	timing.mark("open")
	report := stackReport{PID: opened.process.PID()}
	opts := stackOpts{noInline: *noInline, noLines: *noLines, pastMain: *pastMain, live: *corePath == "",
		args: !*noArgs || *full, full: *full, raw: *raw,
		names: sess.LoadedNames(opened.process)}
	threads, err := gdbThreadOrder(opened.process, *onlyTID)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sonde stack: %v\n", err)
		return 1
	}
	if *corePath != "" {
		report.Signal = coreSignal(opened.process)
	}
	report.Threads = make([]threadStack, len(threads))
	// Threads are independent: unwind and symbolize them on every CPU (the
	// session serializes only what must be, per thread and per file).
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(threads)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(threads); i = int(next.Add(1)) - 1 {
				report.Threads[i] = stackOf(sess, threads[i].Context, opts)
				report.Threads[i].num = threads[i].num
			}
		}()
	}
	wg.Wait()
	timing.mark("stacks")
	for _, p := range coreProblems(opened.target) {
		fmt.Fprintln(os.Stderr, p)
	}
	for _, h := range debugHints(sess, report.Threads) {
		fmt.Fprintln(os.Stderr, h)
	}
	// Let a live process go before formatting the output.
	release()
	timing.mark("release")
	defer timing.print()
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // C++ names keep their < and >
		if err := enc.Encode(report); err != nil {
			fmt.Fprintf(os.Stderr, "sonde stack: %v\n", err)
			return 1
		}
		return 0
	}
	if report.Signal != nil {
		printSignal(os.Stdout, report.Signal)
	}
	printStack(os.Stdout, report)
	return 0
}

// The JSON shape of `sonde stack --json` (field names are a contract).
type stackReport struct {
	PID int `json:"pid"`
	// Signal is how a core's process ended (stack_core.go).
	Signal  *signalReport `json:"signal,omitempty"`
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
	num     int               // gdb's thread number (stack_threads.go)
	mods    []*session.Module // the frames' modules (stack_hints.go)
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
	// Lookahead: the pc was vouched for by the frame-pointer chain above
	// it, not by a call before it (stack_lookahead.go).
	Lookahead bool `json:"lookahead,omitempty"`
	// Args and Locals (--full only): stack_args.go.
	Args   []stackVar  `json:"args"`
	Locals *[]stackVar `json:"locals,omitempty"`
	debug  bool        // DWARF covers the frame
	// inLibrary marks frames in a shared library (gdb says "from LIB" for
	// those when it has no line).
	inLibrary bool
	// showAddress is gdb's rule for printing "0xPC in" (see markAddresses).
	showAddress bool
}

func threadReport(th *target.Context, trace unwind.Trace, err error, noLines bool, names map[*session.Module]string) threadStack {
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
			if m, ok := f.Module.Client.(*session.Module); ok {
				ts.mods = append(ts.mods, m)
				sf.inLibrary = !m.Main
				if n := names[m]; n != "" {
					sf.Module = n
				}
			}
		}
		if f.CFA != 0 {
			sf.CFA = "0x" + strconv.FormatUint(f.CFA, 16)
		}
		if f.HasSymbol {
			s := f.Symbol
			if s.Function != "" {
				// gdb prints DWARF functions by name, ELF symbols as
				// demangled (C++ parameter lists included).
				fn := s.Function
				if s.File != "" {
					fn = gdbName(fn, s.LinkageName)
				} else {
					fn = gdbSymbolName(fn, s.LinkageName)
				}
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

// stackOpts are the flags that shape one thread's stack.
type stackOpts struct {
	noInline, noLines, pastMain, live bool
	args, full, raw                   bool                       // read arguments (and locals): stack_args.go
	names                             map[*session.Module]string // see Session.LoadedNames
}

// stackOf unwinds, symbolizes and names one stopped thread's frames.
func stackOf(sess *session.Session, th *target.Context, o stackOpts) threadStack {
	regs, err := th.Registers()
	var trace unwind.Trace
	if err == nil {
		trace, err = sess.Backtrace(th, session.StackOptions{NoInline: o.noInline, Registers: regs})
	}
	if !o.pastMain {
		trace.Frames = untilMainOf(sess, trace.Frames)
	}
	ts := threadReport(th, trace, err, o.noLines, o.names)
	ts.live = o.live
	if regs != nil {
		ts.pthread, _ = regs.DWARF(arch.DwarfFSBase)
	}
	markAddresses(sess, trace, ts.Frames, o.noLines)
	markLookahead(trace, ts.Frames)
	gdbFiles(sess, trace, ts.Frames)
	if o.args && err == nil {
		addFrameVars(sess, th, trace, ts.Frames, o.full, !o.raw)
	}
	return ts
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
