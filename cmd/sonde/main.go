// Command sonde is the debug and trace agent's command line: the TCF agent and
// one-shot tools (maps, regs, stack, symbolize). See docs in ../../README.md.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/sondedbg/sonde/symbols"
)

// A verb is one subcommand. run returns the process exit code: 0 ok, 1 failure,
// 2 usage error.
type verb struct {
	name    string
	summary string
	run     func(args []string) int
}

var verbs []verb

func register(v verb) { verbs = append(verbs, v) }

// usage prints the verbs to w: stdout when asked for, stderr after a mistake.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: sonde <verb> [flags] [args]\n\nverbs:")
	for _, v := range verbs {
		fmt.Fprintf(w, "  %-10s %s\n", v.name, v.summary)
	}
	fmt.Fprintln(w, "\nRun 'sonde <verb> --help' for a verb's flags.")
}

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	name := os.Args[1]
	if name == "-h" || name == "--help" || name == "help" {
		usage(os.Stdout)
		os.Exit(0)
	}
	for _, v := range verbs {
		if v.name == name {
			stop, stopTrace := startProfile(), startTrace()
			code := v.run(os.Args[2:])
			symbols.WaitPersisted() // cache files being written in the background
			stopTrace()
			stop()
			os.Exit(code)
		}
	}
	fmt.Fprintf(os.Stderr, "sonde: unknown verb %q\nRun 'sonde --help' for the verbs.\n", name)
	os.Exit(2)
}

// startProfile writes a CPU profile to $SONDE_CPUPROFILE when it is set, for
// finding out where a slow command spends its time.
func startProfile() (stop func()) {
	path := os.Getenv("SONDE_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sonde: SONDE_CPUPROFILE: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "sonde: SONDE_CPUPROFILE: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
