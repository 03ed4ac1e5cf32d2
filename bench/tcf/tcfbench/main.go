// Command tcfbench measures a TCF agent — `sonde agent`, the Eclipse TCF C
// agent, any agent that speaks the protocol — with one client, sonde's Go
// client (package tcf/client), so that two agents can be compared on the
// same machine, in the same run, with the same client. Issue 6's speed goals
// are stated that way.
//
//	tcfbench -agent TCP:127.0.0.1:1534 -prog /tmp/agent_prog [-src testdata/agent_prog.c]
//
// It starts the debuggee (testdata/agent_prog.c, built by the caller) through
// the agent with ProcessesV1.start and StopAtMain, and measures:
//
//   - echo: round trips of Diagnostics.echo, one at a time;
//   - pipelined64: batches of 64 Diagnostics.echo sent before the first
//     reply is read;
//   - memget: Memory.get of 1 MiB from a stopped process, base64 (every
//     agent) and raw ZeroCopy blocks (when the agent's Hello lists ZeroCopy);
//   - hit: breakpoint hit + resume, event-driven: the contextSuspended
//     handler sends the next RunControl.resume;
//   - stack57: the 57-frame stack round of tcf/services BenchmarkStack57
//     (StackTrace.getChildren, getContext of all frames, per frame
//     Symbols.findByAddr + LineNumbers.mapToSource, Symbols.getContext per
//     symbol, each stage pipelined), at one stop (warm) and right after each
//     stop (afterStop: the stop itself is not timed).
//
// With -floor it measures instead the warm stack round against an agent that
// does no work — canned replies shaped like sonde's, from a process it
// starts (this binary again) — the floor under any agent's round with this
// client on this machine; no -agent or -prog then.
//
// Each scenario runs -runs times for -time each; tcfbench prints the median
// of the runs and the spread. With -agent-pid it also reports the agent
// process's CPU time per operation (all its threads, from its process CPU
// clock), which tells the agent's share from the
// client's on a shared machine. A scenario the agent cannot do is printed as
// n/a with the reason. -tsv prints one tab-separated line per figure
// (key, value, unit, note) for scripts such as bench/tcf/compare-c-agent.
//
// With -spin the client's reader polls its socket for that long before it
// sleeps (client.Options.ReadSpin), as the agent's does for commands: a
// waiting client then takes each reply without the wake-up of a sleeping
// thread, which on a VM costs tens of microseconds per reply, and the
// figures show more of the agent's own time. The default is 0 (a client
// that sleeps, like most); compare two agents with the same setting.
//
// The client runs on one P (-procs 1), as a TCF client usually is one
// dispatch thread (the Python client, Eclipse's): with two, every reply the
// reader goroutine hands to the waiting one wakes another OS thread (tens of
// microseconds on a VM), and the client, not the agent, set the pace of the
// round trips (echo with sonde 18-21k/s on two Ps, 31-34k/s on one, on the
// 2-vCPU VM of bench/tcf/BENCHMARKS.md). Both agents of a comparison are
// measured with the same setting.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
)

func main() {
	if os.Getenv(cannedEnv) != "" {
		serveCanned()
		return
	}
	agent := flag.String("agent", "", "agent address, TCP:host:port (or host:port)")
	prog := flag.String("prog", "", "path of the debuggee, testdata/agent_prog.c built with gcc -g -O0")
	src := flag.String("src", "testdata/agent_prog.c", "the debuggee's source (for the file:line breakpoint of the Memory.get scenario)")
	runs := flag.Int("runs", 5, "runs per scenario (the median is printed)")
	per := flag.Duration("time", time.Second, "duration of one run")
	agentPID := flag.Int("agent-pid", 0, "the agent's process ID, to report its CPU time per operation (optional)")
	only := flag.String("only", "", "comma-separated scenarios to run (echo,pipelined64,memget,hit,stack57); all by default")
	tsv := flag.Bool("tsv", false, "print tab-separated key, value, unit, note lines")
	procs := flag.Int("procs", 1, "GOMAXPROCS of this client (see the package comment)")
	spin := flag.Duration("spin", 0, "how long the client polls its socket for the next reply before it sleeps (client.Options.ReadSpin; 0: never)")
	cpuProfile := flag.String("cpuprofile", "", "write this client's CPU profile to `file` (go tool pprof)")
	floor := flag.Bool("floor", false, "measure only the warm stack round against a zero-work agent this command starts (no -agent, -prog)")
	flag.Parse()
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	if (!*floor && (*agent == "" || *prog == "")) || *runs < 1 || *per <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tcfbench:", err)
			os.Exit(1)
		}
		defer stop()
	}
	addr := strings.TrimPrefix(*agent, "TCP:")
	b := &bench{
		addr:     addr,
		prog:     *prog,
		src:      *src,
		runs:     *runs,
		per:      *per,
		agentPID: *agentPID,
		spin:     *spin,
		out:      &report{w: os.Stdout, log: os.Stderr, tsv: *tsv},
	}
	run := func() error { return b.run(selected(*only)) }
	if *floor {
		run = b.floor
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "tcfbench:", err)
		os.Exit(1)
	}
}

// startCPUProfile profiles this process into path until the returned
// function is called: where the client's own time goes, which every
// figure includes.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// selected is the set of scenarios named by -only (nil: all).
func selected(only string) map[string]bool {
	if only == "" {
		return nil
	}
	m := map[string]bool{}
	for _, s := range strings.Split(only, ",") {
		m[strings.TrimSpace(s)] = true
	}
	return m
}

// bench is one tcfbench run against one agent.
type bench struct {
	addr, prog, src string
	runs            int
	per             time.Duration
	agentPID        int
	spin            time.Duration // the client's read spin (client.Options.ReadSpin)
	out             *report
	s               *session
}

// scenario is one group of figures; run returns an error only when the
// agent connection itself failed (a scenario the agent cannot do reports
// n/a and returns nil).
type scenario struct {
	name string
	run  func() error
}

func (b *bench) run(which map[string]bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := dial(ctx, b.addr, nil, b.spin)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", b.addr, err)
	}
	defer s.c.Close()
	b.s = s
	// Interrupted: terminate the debuggees first (an agent that detaches
	// when it stops would leave them running, and one loops forever).
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		if _, ok := <-sig; ok {
			s.finish()
			os.Exit(130)
		}
	}()
	b.out.header(b.addr, s)
	for _, sc := range []scenario{
		{"echo", b.echo},
		{"pipelined64", b.pipelined64},
		{"memget", b.memGet},
		{"hit", b.hitResume},
		{"stack57", b.stack57},
	} {
		if which != nil && !which[sc.name] {
			continue
		}
		if err := sc.run(); err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		if err := s.c.Err(); err != nil {
			return fmt.Errorf("%s: the agent closed the channel: %w", sc.name, err)
		}
	}
	return nil
}

// errNA marks a scenario the agent cannot do; its text is the reason.
type errNA struct{ reason string }

func (e *errNA) Error() string { return e.reason }

func na(format string, a ...any) error { return &errNA{fmt.Sprintf(format, a...)} }

// outcome reports err for the figures keys: n/a (with the reason) when the
// agent cannot do it, nil when the connection is still usable.
func (b *bench) outcome(err error, keys ...string) error {
	if err == nil {
		return nil
	}
	var n *errNA
	if !errors.As(err, &n) && b.s.c.Err() != nil {
		return err
	}
	for _, k := range keys {
		b.out.na(k, err.Error())
	}
	return nil
}
