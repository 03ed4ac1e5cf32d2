package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
)

// Version is set at release time with -ldflags "-X main.Version=...".
var Version = "0.1.0-dev"

func init() {
	register(verb{"version", "print version, Go version and build info", runVersion})
}

func runVersion(args []string) int {
	fs := newFlagSet("version", "sonde version", "Prints sonde's version, the Go toolchain that built it, and its build settings.")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(fs, "version takes no arguments")
	}
	fmt.Printf("sonde %s\n", Version)
	fmt.Printf("go %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision", "vcs.time", "vcs.modified", "CGO_ENABLED":
				fmt.Printf("%s %s\n", s.Key, s.Value)
			}
		}
	}
	return 0
}

// newFlagSet makes a verb's flag set whose --help prints the usage line, a
// description and the flags: to stdout when asked for (`sonde stack --help |
// less`), to stderr after a usage error.
func newFlagSet(name, usageLine, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: %s\n\n%s\n", usageLine, description)
		var n int
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(w, "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args; when it returns ok=false the verb must return code
// (0 after --help, whose text goes to stdout; 2 after a usage error, reported
// on stderr in two short lines by usageError).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	var buf bytes.Buffer
	errOut := fs.Output() // stderr, or a verb's own writer
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	fs.SetOutput(errOut)
	switch {
	case err == flag.ErrHelp:
		os.Stdout.Write(buf.Bytes())
		return 0, false
	case err != nil:
		// The flag package's own text (message and whole usage) is dropped:
		// the message alone, prefixed with the verb, says what is wrong.
		return usageError(fs, flagErrorText(fs, err.Error())), false
	}
	return 0, true
}

// usageError reports a usage mistake the way git and go do: what is wrong,
// then where to read the usage, both on stderr; it returns exit code 2.
func usageError(fs *flag.FlagSet, msg string) int {
	w := fs.Output()
	fmt.Fprintf(w, "sonde %s: %s\n", fs.Name(), msg)
	fmt.Fprintf(w, "Run 'sonde %s --help' for usage.\n", fs.Name())
	return 2
}
