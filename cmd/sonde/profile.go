package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/sondedbg/sonde/profiling"
)

func init() {
	register(verb{"profile", "sample a process by itself and write its stacks: folded, pprof, script, report", runProfile})
}

const profileUsage = "sonde profile [folded|pprof|script|report] [-F HZ] [--duration D] [--fp] [--stack-size BYTES] [-o OUT] (-p PID | -- PROG ARGS...)"

func runProfile(args []string) int {
	mode := "report"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		mode, args = args[0], args[1:]
	}
	fs := newFlagSet("profile", profileUsage,
		"Samples a program's stacks with the kernel's perf events, without perf installed: every\n"+
			"sample carries the user registers and a copy of the stack, unwound with CFI as it arrives,\n"+
			"with inline frames and lines; kernel frames from the kernel's callchain. Writes the\n"+
			"outputs of sonde perf when the program exits, after --duration, or on Ctrl-C (with -p).\n"+
			"A launched program keeps sonde's standard input, output and error.")
	pid := fs.Int("p", 0, "sample this running process (all its threads)")
	hz := fs.Int("F", 999, "samples per second per thread")
	duration := fs.Duration("duration", 0, "stop after this long (with -p; a launched program is sampled until it exits)")
	fp := fs.Bool("fp", false, "frame-pointer callchains from the kernel instead of stack copies (cheaper, misses frames without frame pointers)")
	stackSize := fs.Uint("stack-size", profiling.DefaultStackBytes, "bytes of user stack each sample copies (a multiple of 8 up to 65528; perf record's default): deeper walks stop at its end, counted at exit")
	output := fs.String("o", "", "write to this file instead of standard output")
	noInline := fs.Bool("no-inline", false, "one frame per physical frame, named by its ELF symbol")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	sink, err := newPerfSink(mode)
	if err != nil {
		return usageError(fs, err.Error())
	}
	prog := fs.Args()
	if *hz <= 0 {
		return usageError(fs, fmt.Sprintf("-F %d: want a positive rate (samples per second)", *hz))
	}
	if *stackSize == 0 || *stackSize%8 != 0 || *stackSize > profiling.MaxStackBytes {
		return usageError(fs, fmt.Sprintf("--stack-size %d: want a multiple of 8 from 8 to %d", *stackSize, profiling.MaxStackBytes))
	}
	if *pid != 0 && len(prog) != 0 {
		return usageError(fs, "give either -p PID or a program to run after --, not both")
	}
	if (*pid == 0) == (len(prog) == 0) {
		return usageError(fs, "give either -p PID or a program to run after --")
	}
	out := io.Writer(os.Stdout)
	if *output != "" {
		f, err := os.Create(*output)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sonde profile: %v\n", err)
			return 1
		}
		defer f.Close()
		out = f
	}
	bw := bufio.NewWriterSize(out, 1<<16)
	if s, ok := sink.(*scriptSink); ok {
		s.w = bw
	}
	opts := profiling.SamplerOptions{Frequency: *hz, FramePointers: *fp, StackBytes: uint32(*stackSize)}
	b := profiling.NewBuilder(profiling.Options{NoInline: *noInline, Kernel: profiling.LocalKernel()})
	defer b.Close()
	var samples, short uint64
	add := func(s *profiling.Sample) error {
		samples++
		if s.Stop == profiling.StopStackCopy {
			short++
		}
		return sink.add(s)
	}
	if *pid != 0 {
		if err = profilePID(*pid, opts, *duration, b, add); err != nil {
			err = processGone(*pid, err)
		}
	} else {
		err = profileLaunch(prog, opts, b, add)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sonde profile: %v\n", err)
		return 1
	}
	if err := sink.finish(bw, nil); err != nil {
		fmt.Fprintf(os.Stderr, "sonde profile: %v\n", err)
		return 1
	}
	if err := bw.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "sonde profile: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "sonde profile: %d samples", samples)
	if b.Lost > 0 {
		fmt.Fprintf(os.Stderr, ", %d lost by the kernel", b.Lost)
	}
	if short > 0 {
		fmt.Fprintf(os.Stderr, ", %d with stacks deeper than the %d bytes copied (--stack-size)", short, *stackSize)
	}
	fmt.Fprintln(os.Stderr)
	return 0
}

// newPerfSink makes the output a mode names (sonde perf's and sonde profile's).
func newPerfSink(mode string) (perfSink, error) {
	switch mode {
	case "folded":
		return foldedSink{profiling.NewFolded()}, nil
	case "pprof":
		return pprofSink{profiling.NewPprof()}, nil
	case "report":
		return reportSink{profiling.NewReport()}, nil
	case "script":
		return &scriptSink{}, nil
	}
	return nil, fmt.Errorf("unknown output %q (folded, pprof, script or report)", mode)
}

// profilePID samples a running process until it exits, the duration ends
// or the user interrupts.
func profilePID(pid int, opts profiling.SamplerOptions, d time.Duration, b *profiling.Builder, add func(*profiling.Sample) error) error {
	tids, err := threadsOf(pid)
	if err != nil {
		return err
	}
	s, err := profiling.NewSampler(tids, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Synthesize(b, pid); err != nil {
		return err
	}
	if err := s.Enable(); err != nil {
		return err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stop)
	var deadline <-chan time.Time
	if d > 0 {
		deadline = time.After(d)
	}
	fmt.Fprintf(os.Stderr, "sonde profile: sampling process %d (%d threads); Ctrl-C to stop\n", pid, len(tids))
	for {
		select {
		case <-stop:
			s.Disable()
			return s.Drain(b, add)
		case <-deadline:
			s.Disable()
			return s.Drain(b, add)
		default:
		}
		s.Wait(50)
		if err := s.Drain(b, add); err != nil {
			return err
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			return s.Drain(b, add)
		}
	}
}

// profileLaunch runs a program and samples it from its exec to its exit: a
// shell waits on a pipe until the events are open (with enable-on-exec),
// then execs the program in place.
func profileLaunch(argv []string, opts profiling.SamplerOptions, b *profiling.Builder, add func(*profiling.Sample) error) error {
	path, err := checkProgram(argv[0]) // what is wrong with PROG, and what to do
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", `read _ <&3; exec 3<&-; exec "$0" "$@"`, path}, argv[1:]...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{r}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return err
	}
	r.Close()
	opts.EnableOnExec = true
	s, err := profiling.NewSampler([]int{cmd.Process.Pid}, opts)
	if err != nil {
		w.Close()
		cmd.Process.Kill()
		cmd.Wait()
		return err
	}
	defer s.Close()
	// The terminal's Ctrl-C goes to the program; sonde waits for it to end.
	signal.Ignore(os.Interrupt)
	defer signal.Reset(os.Interrupt)
	w.Write([]byte("go\n"))
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case werr := <-done:
			if err := s.Drain(b, add); err != nil {
				return err
			}
			var ee *exec.ExitError
			if errors.As(werr, &ee) {
				fmt.Fprintf(os.Stderr, "sonde profile: %s %s\n", argv[0], ee.ProcessState)
			}
			return nil
		default:
		}
		s.Wait(50)
		if err := s.Drain(b, add); err != nil {
			return err
		}
	}
}

// threadsOf lists a process's threads.
func threadsOf(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	var tids []int
	for _, e := range ents {
		if t, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, t)
		}
	}
	return tids, nil
}
