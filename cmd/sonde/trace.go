package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/ptrace"
	"github.com/sondedbg/sonde/translate/probes"
)

func init() {
	register(verb{"trace", "count calls with fast probes (jump-patched, no trap) or breakpoints", runTrace})
}

const traceUsage = "sonde trace [--probe LOC]... [--break LOC]... [--count] [--args] [--latency] [--if EXPR] [--duration D] [--json] (-p PID | -- PROG ARGS...)"

const traceHelp = `Counts how often code runs. A --probe replaces the instruction at LOC with a
jump into a trampoline sonde maps next to the module: hits cost nanoseconds and
never stop the program. Where that is not safe (the site is too short, a branch
lands inside the patched bytes, ...) the probe is a breakpoint instead and the
report says why. A --break is always a breakpoint (a trap to sonde per hit).
With --latency each --probe LOC (a function's entry) also times its calls:
exit probes go on every ret and tail jump found by decoding the function (no
return address is replaced, so C++ exceptions and longjmp pass through), and a
log2 histogram of the durations is printed per location. With --args every hit
is printed with the first six integer arguments and the thread: the probe
records them in a ring buffer sonde drains while the program runs (no trap;
if sonde falls more than 1024 hits behind, the overwritten ones are counted
as lost and said). --if EXPR is compiled into each probe: hits where it does
not hold cost nanoseconds, and only those where it holds are counted (or,
with --args, recorded and printed).

LOC is a function (gdb's spellings: name, ns::name, name(int), linkage name),
FILE:LINE, *ADDR, or any ELF symbol (asm labels included).

With -- PROG ARGS the program is started with sonde's stdin, stdout and stderr
and the counts are printed when it exits (however it exits), on SIGINT or
SIGTERM, or after --duration. With -p the process is attached, traced for
--duration (or until SIGINT/SIGTERM), then every probe is removed, the code
caches freed and sonde detaches and exits 0.`

type traceOptions struct {
	probes, breaks multiFlag
	count, latency bool
	args           bool
	cond           string
	duration       time.Duration
	asJSON         bool
	pid            int
	argv           []string
}

func runTrace(args []string) int {
	fs := newFlagSet("trace", traceUsage, traceHelp)
	var o traceOptions
	fs.Var(&o.probes, "probe", "put a fast probe at `LOC` (repeatable)")
	fs.Var(&o.breaks, "break", "put a counting breakpoint at `LOC` (repeatable)")
	fs.BoolVar(&o.count, "count", false, "print per-location hit counts at the end (the default)")
	fs.DurationVar(&o.duration, "duration", 0, "end the trace after `D` (e.g. 5s)")
	fs.BoolVar(&o.asJSON, "json", false, "print JSON")
	fs.IntVar(&o.pid, "p", 0, "trace the running process `PID`")
	fs.BoolVar(&o.latency, "latency", false, "time the calls of each --probe function: log2 histograms of their durations")
	fs.BoolVar(&o.args, "args", false, "print each hit with the first six integer arguments (rdi, rsi, rdx, rcx, r8, r9), recorded by the probe without stopping the program")
	fs.StringVar(&o.cond, "if", "", "count (or with --args print) only the hits where `EXPR` holds: ARG OP NUMBER, ARG one of arg0..arg5, a register (rax, rbx, ..., r15) or a global variable (64-bit), OP one of == != < <= > >= (signed); compiled into the probe")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	o.argv = fs.Args()
	switch {
	case o.cond != "" && o.latency:
		return usageError(fs, "--if and --latency do not go together yet")
	case o.args && o.latency:
		return usageError(fs, "--args and --latency do not go together yet")
	case len(o.probes)+len(o.breaks) == 0:
		return usageError(fs, "give at least one --probe or --break LOC")
	case o.pid != 0 && len(o.argv) > 0:
		return usageError(fs, "give either -p PID or -- PROG ARGS, not both")
	case o.pid == 0 && len(o.argv) == 0:
		return usageError(fs, "give -p PID or -- PROG ARGS")
	case o.pid < 0:
		return usageError(fs, "-p wants a process ID")
	case o.duration < 0:
		return usageError(fs, "--duration must be positive")
	}
	return o.run(os.Stdout, os.Stderr)
}

// traceRow is one line of the report (one address of one location).
type traceRow struct {
	Location string         `json:"location"`
	Address  string         `json:"address"`
	Kind     string         `json:"kind"`
	Hits     uint64         `json:"hits"`
	Fallback string         `json:"fallback"`
	Latency  *latencyReport `json:"latency,omitempty"`
	// Lost: --args records the program overwrote before sonde read them.
	Lost uint64 `json:"lost,omitempty"`
}

// latencyReport is a probe's histogram of call durations: the calls that
// returned while traced (Timed) by log2 buckets of TSC ticks, converted to
// nanoseconds.
type latencyReport struct {
	Timed   uint64          `json:"timed"`
	Buckets []latencyBucket `json:"buckets"`
}

type latencyBucket struct {
	LoNS  float64 `json:"lo_ns"`
	HiNS  float64 `json:"hi_ns"`
	Count uint64  `json:"count"`
}

func latencyOf(p *probes.Probe) *latencyReport {
	if !p.HasLatency() {
		return nil
	}
	hz := probes.TSCHz()
	rep := &latencyReport{Buckets: []latencyBucket{}}
	h := p.Histogram()
	for k, c := range h {
		if c == 0 {
			continue
		}
		lo := float64(uint64(1)<<k) / hz * 1e9
		if k == 0 {
			lo = 0
		}
		rep.Timed += c
		rep.Buckets = append(rep.Buckets, latencyBucket{LoNS: lo, HiNS: float64(uint64(1)<<(k+1)) / hz * 1e9, Count: c})
	}
	return rep
}

func (o *traceOptions) run(stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "sonde trace: %v\n", err)
		return 1
	}
	tg, err := ptrace.New()
	if err != nil {
		return fail(err)
	}
	closed := false
	closeTarget := func() {
		if !closed {
			closed = true
			tg.Close()
		}
	}
	defer closeTarget()
	exited := make(chan target.ExitStatus, 1)
	var proc *target.Context
	procReady := make(chan struct{})
	tg.AddListener(func(e target.Event) {
		<-procReady
		if e.Kind == target.EventExited && e.Context == proc && e.Exit != nil && !e.Exit.Detached {
			select {
			case exited <- *e.Exit:
			default:
			}
		}
	})
	if o.pid != 0 {
		if proc, err = tg.Attach(o.pid, target.AttachOptions{Stop: true}); err != nil {
			err = attachError(o.pid, err) // why, and what to do
		}
	} else if _, err = checkProgram(o.argv[0]); err == nil { // what is wrong with PROG, and what to do
		proc, _, err = tg.Launch(target.LaunchOptions{Path: o.argv[0], Argv: o.argv, StopAtEntry: true, Stdio: target.StdioInherit})
	}
	close(procReady)
	if err != nil {
		return fail(err)
	}
	// From here on SIGINT and SIGTERM end the trace (they no longer kill sonde
	// with probes planted).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	sess := session.New(tg, session.Options{Warn: func(string) {}}) // missing debug info of other modules is not our business
	// Libraries loaded after this (before main, by dlopen) are seen.
	if err := sess.TrackModules(proc, false); err != nil {
		fmt.Fprintf(stderr, "sonde trace: not following library loads: %v\n", err)
	}
	set, err := probes.New(tg, proc)
	if err != nil {
		return fail(err)
	}
	if err := o.plant(sess, tg, proc, set, stdout); err != nil {
		set.Close()
		if o.pid == 0 {
			proc.Terminate()
		}
		return fail(err)
	}
	// (Not with -p: an int3 on execve left by a sonde killed with SIGKILL
	// would kill a server's every fork+exec child; a traced process that
	// itself execs is rare there.)
	unexec := func() {}
	if o.pid == 0 {
		unexec = snapshotAtExec(sess, tg, proc, set)
	}
	// The locations are resolved: the linker's hook goes (an int3 a sonde
	// killed with SIGKILL would leave to kill the program at its next
	// dlopen; the jump probes left would only keep counting).
	if err := sess.UntrackModules(proc); err != nil {
		fmt.Fprintf(stderr, "sonde trace: removing the library-load hook: %v\n", err)
	}
	// The program runs on through whatever stops it (a signal is delivered
	// to it as untraced): the trace only counts.
	tg.AddListener(func(e target.Event) {
		if e.Kind == target.EventStopped && !e.Context.IsProcess() && e.Context.Process() == proc {
			e.Context.ResumeAsync(target.ResumeContinue, target.ResumeOptions{}, func(error) {})
		}
	})
	if err := proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		set.Close()
		return fail(err)
	}
	var timeout <-chan time.Time
	if o.duration > 0 {
		timeout = time.After(o.duration)
	}
	select {
	case st := <-exited:
		fmt.Fprintf(stderr, "sonde trace: %s %s\n", o.argv[0], describeExit(st))
	case s := <-sigs:
		fmt.Fprintf(stderr, "sonde trace: %v: removing the probes and detaching from %d\n", s, proc.PID())
	case <-timeout:
	}
	unexec()
	if err := set.Close(); err != nil {
		fmt.Fprintf(stderr, "sonde trace: removing probes: %v\n", err)
	}
	closeTarget() // detach (a process that exited is gone already)
	rows := make([]traceRow, 0)
	for _, p := range set.Probes() {
		rows = append(rows, traceRow{Location: p.Location, Address: fmt.Sprintf("%#x", p.Addr), Kind: string(p.Kind), Hits: p.Hits(), Fallback: p.Fallback, Latency: latencyOf(p)})
		if r := p.Ring(); r != nil {
			rows[len(rows)-1].Lost = r.Lost()
		}
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"probes": rows}); err != nil {
			return fail(err)
		}
		return 0
	}
	printTraceTable(stdout, rows)
	return 0
}

func describeExit(st target.ExitStatus) string {
	if st.Signal != 0 {
		return fmt.Sprintf("was killed by signal %d", st.Signal)
	}
	return fmt.Sprintf("exited with code %d", st.Code)
}

func printTraceTable(w io.Writer, rows []traceRow) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCATION\tADDRESS\tKIND\tHITS")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", r.Location, r.Address, r.Kind, r.Hits)
	}
	tw.Flush()
	for _, r := range rows {
		switch {
		case r.Fallback != "" && r.Kind == "breakpoint":
			fmt.Fprintf(w, "%s at %s is a breakpoint: %s\n", r.Location, r.Address, r.Fallback)
		case r.Fallback != "":
			fmt.Fprintf(w, "%s at %s: %s\n", r.Location, r.Address, r.Fallback)
		}
	}
	for _, r := range rows {
		if r.Latency != nil {
			printHistogram(w, r)
		}
	}
}

// printHistogram prints a latency histogram as funclatency does.
func printHistogram(w io.Writer, r traceRow) {
	fmt.Fprintf(w, "\n%s (%s): %d calls, %d timed\n", r.Location, r.Address, r.Hits, r.Latency.Timed)
	var top uint64
	for _, b := range r.Latency.Buckets {
		top = max(top, b.Count)
	}
	for _, b := range r.Latency.Buckets {
		bar := int(40 * b.Count / max(top, 1))
		fmt.Fprintf(w, "  %12s .. %-12s %10d |%-40s|\n", formatNS(b.LoNS), formatNS(b.HiNS), b.Count, strings.Repeat("@", bar))
	}
}

func formatNS(ns float64) string {
	switch {
	case ns == 0:
		return "0"
	case ns < 10:
		return fmt.Sprintf("%.1fns", ns)
	case ns < 1000:
		return fmt.Sprintf("%.0fns", ns)
	}
	return time.Duration(ns).Round(time.Nanosecond).String()
}

// plant resolves every location and puts its probes and breakpoints in. At a
// launched program's entry only the executable and the dynamic linker are
// mapped: locations found nowhere yet are tried again at main, once the
// libraries are loaded.
func (o *traceOptions) plant(sess *session.Session, tg *target.Target, proc *target.Context, set *probes.Set, stdout io.Writer) error {
	type want struct {
		loc   string
		probe bool
	}
	var all []want
	for _, l := range o.probes {
		all = append(all, want{l, true})
	}
	for _, l := range o.breaks {
		all = append(all, want{l, false})
	}
	resolved := make([][]uint64, len(all))
	var missing []error
	atMain := false
	resolveAll := func() {
		missing = nil
		for i, w := range all {
			if resolved[i] != nil {
				continue
			}
			addrs, err := resolveLocation(sess, proc, w.loc)
			if err != nil {
				missing = append(missing, fmt.Errorf("%s: %w", w.loc, err))
				continue
			}
			if !atMain && o.pid == 0 && sess.InInterpreter(proc, addrs) {
				// At the entry only the dynamic linker's private copies
				// (memcpy, getpid, ...) are there: the program calls the
				// libraries', loaded by main.
				missing = append(missing, fmt.Errorf("%s: only in the dynamic linker so far", w.loc))
				continue
			}
			resolved[i] = addrs
		}
	}
	resolveAll()
	// A launched program runs to where its libraries are loaded first: the
	// locations in them resolve, --args finds the thread block set up, and
	// libc's execve is there for snapshotAtExec. (No code of the
	// executable's runs before its entry.)
	if o.pid == 0 {
		if err := runToMain(sess, tg, proc); err != nil {
			if len(missing) == 0 {
				return fmt.Errorf("running the program to its entry point: %w", err)
			}
			return fmt.Errorf("%w (and running to the entry point to load the libraries failed: %v)", errors.Join(missing...), err)
		}
		atMain = true
		resolveAll()
	}
	if len(missing) > 0 {
		return errors.Join(missing...)
	}
	var cond *probes.Cond
	if o.cond != "" {
		c, err := parseCond(sess, proc, o.cond)
		if err != nil {
			return fmt.Errorf("--if %q: %w", o.cond, err)
		}
		cond = &c
	}
	if o.args {
		tidOff, tidErr := set.TIDOffset()
		for i, w := range all {
			for _, a := range resolved[i] {
				if err := o.plantArgs(sess, proc, set, w.loc, a, w.probe, cond, tidOff, tidErr, stdout, os.Stderr); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for i, w := range all {
		if cond != nil {
			for _, a := range resolved[i] {
				if err := o.plantIf(sess, proc, set, w.loc, a, w.probe, *cond, stdout); err != nil {
					return err
				}
			}
			continue
		}
		for _, a := range resolved[i] {
			var err error
			if o.args {
				why := ""
				if w.probe {
					why = "--args reads the arguments at a breakpoint (probes have no ring buffer yet)"
				}
				_, err = set.AddTrap(w.loc, a, why, hitPrinter(stdout, w.loc, a, o.asJSON))
			} else if w.probe {
				var fn *probes.Function
				fn, err = functionAt(sess, proc, a)
				if err != nil {
					fn = nil // AddCount falls back and says why
				}
				if o.latency {
					_, err = set.AddLatency(w.loc, a, fn)
				} else {
					_, err = set.AddCount(w.loc, a, fn)
				}
			} else {
				_, err = set.AddBreakpoint(w.loc, a)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// resolveLocation turns LOC into run-time addresses: *ADDR, FILE:LINE, a
// function, or any ELF symbol.
func resolveLocation(sess *session.Session, proc *target.Context, loc string) ([]uint64, error) {
	if strings.HasPrefix(loc, "*") {
		a, err := strconv.ParseUint(strings.TrimSpace(loc[1:]), 0, 64)
		if err != nil {
			return nil, fmt.Errorf("not an address: %v", err)
		}
		return []uint64{a}, nil
	}
	if i := strings.LastIndexByte(loc, ':'); i > 0 && i < len(loc)-1 && !strings.Contains(loc[i-1:i+1], "::") {
		if line, err := strconv.Atoi(loc[i+1:]); err == nil && line > 0 {
			return sess.LineAddresses(proc, loc[:i], line, 0)
		}
	}
	addrs, err := sess.FunctionAddresses(proc, loc)
	if err == nil && len(addrs) > 0 {
		// The definition calls bind to; an indirect function's chosen
		// implementation.
		addrs, _ = sess.CalledAddresses(proc, loc, addrs)
		return addrs, nil
	}
	if syms, err2 := sess.SymbolAddresses(proc, loc); err2 == nil && len(syms) > 0 {
		return syms, nil
	}
	if err == nil {
		err = errors.New("no such function or symbol")
	}
	return nil, err
}

// maxProbedFunction bounds the code read to check a site.
const maxProbedFunction = 4 << 20

// functionAt reads the function containing a (by the ELF symbol table).
func functionAt(sess *session.Session, proc *target.Context, a uint64) (*probes.Function, error) {
	name, lo, hi, err := sess.FunctionBounds(proc, a)
	if err != nil {
		return nil, err
	}
	if hi-lo > maxProbedFunction {
		return nil, fmt.Errorf("function %s is %d bytes long", name, hi-lo)
	}
	pad := sess.PaddingAfter(proc, hi, 15)
	code := make([]byte, hi-lo+uint64(pad))
	if _, err := proc.ReadMemory(lo, code); err != nil {
		return nil, err
	}
	return withNeighbors(sess, proc, &probes.Function{Name: name, Lo: lo, Code: code[:hi-lo], Padding: code[hi-lo:]}), nil
}

// runToMain runs a program stopped at its exec to where the libraries it
// links are loaded and its thread block is set up: the executable's entry
// point when it has a dynamic linker (which has loaded and initialised
// them by then; Debian's executables are stripped, without a main symbol,
// and code before main — constructors, __libc_start_main — is counted
// too), main for a static one (whose entry code sets up the thread block
// itself), its entry when it has no main symbol either.
func runToMain(sess *session.Session, tg *target.Target, proc *target.Context) error {
	at, err := startAddress(sess, proc)
	if err != nil {
		return err
	}
	if alreadyAt(proc, at) {
		return nil // a static program's entry is where its exec stops
	}
	stopped := make(chan target.Event, 1)
	remove := tg.AddListener(func(e target.Event) {
		if (e.Kind == target.EventStopped && e.Context.Process() == proc) || (e.Kind == target.EventExited && e.Context == proc) {
			select {
			case stopped <- e:
			default:
			}
		}
	})
	defer remove()
	bp, err := tg.SetBreakpoint(proc, target.BreakpointSpec{Addr: at, Kind: target.BreakpointSoftware})
	if err != nil {
		return err
	}
	defer tg.RemoveBreakpoint(bp)
	if err := proc.Resume(target.ResumeContinue, target.ResumeOptions{}); err != nil {
		return err
	}
	select {
	case e := <-stopped:
		if e.Kind == target.EventExited {
			return errors.New("the program exited before its entry point")
		}
		if e.Reason == nil {
			return errors.New("the program stopped before its entry point")
		}
		if e.Reason.Kind != target.ReasonBreakpoint {
			return fmt.Errorf("the program stopped before its entry point (%s)", e.Reason.Kind)
		}
	case <-time.After(30 * time.Second):
		return errors.New("the entry point not reached within 30 s")
	}
	// Every thread stopped, so that probes go in with none running.
	return proc.Suspend()
}

// argRegs are the System V AMD64 integer argument registers, in order.
var argRegs = []string{"rdi", "rsi", "rdx", "rcx", "r8", "r9"}

// hitPrinter returns what prints one hit of loc with its arguments (one line
// of text, or one JSON object a line).
func hitPrinter(w io.Writer, loc string, addr uint64, asJSON bool) func(*target.Context) {
	var mu sync.Mutex
	return func(th *target.Context) {
		args := make([]string, 0, len(argRegs))
		if regs, err := th.Registers(); err == nil {
			for _, name := range argRegs {
				v, _ := regs.Uint64(regs.Arch.ByName(name))
				args = append(args, fmt.Sprintf("%#x", v))
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if asJSON {
			b, _ := json.Marshal(map[string]any{"hit": loc, "address": fmt.Sprintf("%#x", addr), "tid": th.TID(), "args": args})
			fmt.Fprintf(w, "%s\n", b)
			return
		}
		fmt.Fprintf(w, "%s [%d] (%s)\n", loc, th.TID(), strings.Join(args, ", "))
	}
}

// plantIf puts a conditional probe (or breakpoint) at a.
func (o *traceOptions) plantIf(sess *session.Session, proc *target.Context, set *probes.Set, loc string, a uint64, probe bool, c probes.Cond, stdout io.Writer) error {
	var fn *probes.Function
	if probe {
		fn, _ = functionAt(sess, proc, a)
	}
	var p *probes.Probe
	var err error
	if o.args {
		p, err = set.AddTrapIf(loc, a, fn, c, hitPrinter(stdout, loc, a, o.asJSON))
	} else {
		p, err = set.AddCountIf(loc, a, fn, c)
	}
	if err == nil && !probe {
		p.Fallback = "" // asked for
	}
	return err
}

// parseCond parses ARG OP NUMBER.
func parseCond(sess *session.Session, proc *target.Context, expr string) (probes.Cond, error) {
	var c probes.Cond
	ops := []string{"==", "!=", "<=", ">=", "<", ">"}
	i, op := -1, ""
	for _, o := range ops {
		if k := strings.Index(expr, o); k > 0 {
			i, op = k, o
			break
		}
	}
	if i < 0 {
		return c, errors.New("want ARG OP NUMBER, OP one of == != < <= > >=")
	}
	left, right := strings.TrimSpace(expr[:i]), strings.TrimSpace(expr[i+len(op):])
	v, err := strconv.ParseInt(right, 0, 64)
	if err != nil {
		return c, fmt.Errorf("%q is not a number", right)
	}
	c.Op, c.Right = op, v
	argRegsByName := map[string]string{"arg0": "rdi", "arg1": "rsi", "arg2": "rdx", "arg3": "rcx", "arg4": "r8", "arg5": "r9"}
	if r, ok := argRegsByName[left]; ok {
		c.Left.Reg = r
		return c, c.Check()
	}
	switch left {
	case "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15":
		c.Left.Reg = left
		return c, c.Check()
	}
	addrs, err := sess.VariableAddresses(proc, left)
	if err != nil {
		addrs, err = sess.SymbolAddresses(proc, left)
	}
	if err != nil || len(addrs) == 0 {
		return c, fmt.Errorf("%q is no argument, register or global variable: %v", left, err)
	}
	c.Left.Addr = addrs[0]
	return c, c.Check()
}
