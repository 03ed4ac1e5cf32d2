package main

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/sondedbg/sonde/profiling"
)

func init() {
	register(verb{"perf", "turn a perf.data recording into stacks: folded, pprof, script, report", runPerf})
}

const perfUsage = "sonde perf [folded|pprof|script|report] [-i perf.data] [-o OUT] [--no-inline]"

func runPerf(args []string) int {
	mode := "report"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		mode, args = args[0], args[1:]
	}
	fs := newFlagSet("perf", perfUsage,
		"Reads a recording of `perf record` (file or pipe mode, compressed or not; best with\n"+
			"--call-graph dwarf) and unwinds every sample's user stack with CFI, with inline frames\n"+
			"and source lines, as sonde stack does; kernel frames come from the recording's callchain.\n"+
			"  folded  one line per distinct stack, 'comm;outermost;...;innermost count', for\n"+
			"          flamegraph.pl, inferno and speedscope\n"+
			"  pprof   a gzipped pprof profile with functions, lines and inline frames\n"+
			"          (go tool pprof -http=: OUT)\n"+
			"  script  every sample with its stack, like perf script\n"+
			"  report  the functions with the most samples, self and total, like perf report\n"+
			"Files that changed since the recording are found in perf's build-id cache ($HOME/.debug).")
	input := fs.String("i", "perf.data", "the recording; - reads a pipe-mode recording from standard input")
	output := fs.String("o", "", "write to this file instead of standard output")
	noInline := fs.Bool("no-inline", false, "one frame per physical frame, named by its ELF symbol, as perf --no-inline")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(fs, fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	sink, err := newPerfSink(mode)
	if err != nil {
		return usageError(fs, err.Error())
	}
	prepareHeap(*input)
	var rec *profiling.Recording
	rec, err = profiling.OpenRecording(*input, profiling.Options{NoInline: *noInline})
	if err != nil {
		fmt.Fprintf(os.Stderr, "sonde perf: %v\n", perfDataError(*input, err))
		return 1
	}
	defer rec.Close()
	for _, w := range rec.Warnings {
		fmt.Fprintf(os.Stderr, "sonde perf: warning: %s\n", w)
	}
	out := io.Writer(os.Stdout)
	if *output != "" {
		f, err := os.Create(*output)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sonde perf: %v\n", err)
			return 1
		}
		defer f.Close()
		out = f
	}
	bw := bufio.NewWriterSize(out, 1<<16)
	if s, ok := sink.(*scriptSink); ok {
		s.w = bw // script streams: to the output file when there is one
		s.sc = profiling.NewScript(bw, rec.Header())
	}
	warned := len(rec.Warnings)
	err = rec.Each(sink.add)
	for _, w := range rec.Warnings[warned:] {
		fmt.Fprintf(os.Stderr, "sonde perf: warning: %s\n", w)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sonde perf: %v\n", err)
		return 1
	}
	if err := sink.finish(bw, rec); err != nil {
		fmt.Fprintf(os.Stderr, "sonde perf: %v\n", err)
		return 1
	}
	if err := bw.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "sonde perf: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "sonde perf: %d samples", rec.Samples)
	if lost := rec.Lost(); lost > 0 {
		fmt.Fprintf(os.Stderr, ", %d lost by the kernel", lost)
	}
	fmt.Fprintln(os.Stderr)
	return 0
}

// perfSink is one output of sonde perf.
type perfSink interface {
	add(*profiling.Sample) error
	finish(w io.Writer, rec *profiling.Recording) error
}

type foldedSink struct{ f *profiling.Folded }

func (s foldedSink) add(x *profiling.Sample) error { s.f.Add(x); return nil }
func (s foldedSink) finish(w io.Writer, _ *profiling.Recording) error {
	_, err := s.f.WriteTo(w)
	return err
}

type pprofSink struct{ p *profiling.Pprof }

func (s pprofSink) add(x *profiling.Sample) error { s.p.Add(x); return nil }
func (s pprofSink) finish(w io.Writer, rec *profiling.Recording) error {
	return s.p.Write(w, rec)
}

type reportSink struct{ r *profiling.Report }

func (s reportSink) add(x *profiling.Sample) error { s.r.Add(x); return nil }
func (s reportSink) finish(w io.Writer, _ *profiling.Recording) error {
	return s.r.WriteTo(w, 50)
}

type scriptSink struct {
	w  io.Writer
	sc *profiling.Script
}

func (s *scriptSink) add(x *profiling.Sample) error { return s.sc.Write(x) }
func (s *scriptSink) finish(io.Writer, *profiling.Recording) error {
	if f, ok := s.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}
