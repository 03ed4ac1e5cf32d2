package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/core"
)

// openedTarget is a target a one-shot verb works on: a core file, or a live
// process attached for as long as the verb needs it.
type openedTarget struct {
	target  *target.Target
	process *target.Context
	close   func()
}

// targetFlags are the flags of the verbs that work on a live process or a
// core file: --core, --exe and --sysroot.
type targetFlags struct {
	core, exe, sysroot *string
}

// addTargetFlags defines the target flags on fs.
func addTargetFlags(fs *flag.FlagSet) *targetFlags {
	return &targetFlags{
		core:    fs.String("core", "", "read the core file `CORE` instead of a live process"),
		exe:     fs.String("exe", "", "the core's executable, when it is not where the core says"),
		sysroot: fs.String("sysroot", "", "look for the core's mapped files under `DIR`"),
	}
}

// open opens the target the flags and the PID argument name.
func (tf *targetFlags) open(fs *flag.FlagSet) (*openedTarget, int) {
	return openTargetArgs(fs, *tf.core, *tf.exe, *tf.sysroot)
}

// openTargetArgs opens --core CORE, or the live process named by the one
// positional PID argument. It returns nil and the exit code on failure.
// The before functions run on the target as soon as it exists (for a live
// process, before the attach).
func openTargetArgs(fs *flag.FlagSet, corePath, exe, sysroot string, before ...func(*target.Target)) (*openedTarget, int) {
	if corePath != "" {
		if p, _ := pidArg(fs); fs.NArg() != 0 || p != "" {
			return nil, usageError(fs, "give either --core CORE or a PID, not both")
		}
		if exe != "" {
			if err := checkExe(exe); err != nil {
				fmt.Fprintf(os.Stderr, "sonde %s: %v\n", fs.Name(), err)
				return nil, 1
			}
		}
		t, err := core.Open(corePath, core.Options{Executable: exe, Sysroot: sysroot})
		if err != nil {
			fmt.Fprintf(os.Stderr, "sonde %s: %v\n", fs.Name(), coreError(corePath, err))
			return nil, 1
		}
		procs := t.Processes()
		if len(procs) == 0 {
			t.Close()
			fmt.Fprintf(os.Stderr, "sonde %s: %s holds no process\n", fs.Name(), corePath)
			return nil, 1
		}
		for _, f := range before {
			f(t)
		}
		return &openedTarget{target: t, process: procs[0], close: func() { t.Close() }}, 0
	}
	// The core-only flags would be passed over without a word for a live
	// process (CLI.md: --exe and --sysroot go with --core).
	if exe != "" {
		return nil, usageError(fs, "--exe goes with --core (a live process's executable is the one it runs)")
	}
	if sysroot != "" {
		return nil, usageError(fs, "--sysroot goes with --core (a live process's files are the ones it mapped)")
	}
	arg, err := pidArg(fs)
	if err != nil {
		return nil, usageError(fs, err.Error())
	}
	pid, err := strconv.Atoi(arg)
	if err != nil || pid <= 0 {
		return nil, usageError(fs, fmt.Sprintf("%q is not a process ID", arg))
	}
	o, err := attachLive(pid, before...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sonde %s: %v\n", fs.Name(), err)
		return nil, 1
	}
	return o, 0
}

// pidArg returns the process ID a verb was given: its one positional
// argument, or -p PID where the verb has that flag (gdb's and eu-stack's
// spelling: sonde stack -p PID), not both.
func pidArg(fs *flag.FlagSet) (string, error) {
	p := ""
	if f := fs.Lookup("p"); f != nil {
		p = f.Value.String()
	}
	switch {
	case p != "" && fs.NArg() == 0:
		return p, nil
	case p == "" && fs.NArg() == 1:
		return fs.Arg(0), nil
	}
	return "", fmt.Errorf("expected one PID (or --core CORE)")
}
