package target

import (
	"io"
	"os"
)

// StdioMode says where a launched program's standard streams go.
type StdioMode int

const (
	StdioInherit StdioMode = iota // share sonde's own
	StdioPipes                    // three pipes, returned in ProcessIO
	StdioPty                      // a new pseudo-terminal; the program is its session leader
	StdioNull                     // /dev/null
)

// LaunchOptions describe a program to start under the debugger.
type LaunchOptions struct {
	Path string   // executable; looked up in PATH when it has no slash
	Argv []string // full argv including argv[0]; defaults to {Path}
	Env  []string // NAME=value; nil inherits sonde's environment, empty is empty
	Dir  string   // working directory; "" keeps sonde's
	// StopAtEntry keeps the program stopped at its first instruction (the
	// dynamic loader's entry) after exec; otherwise it runs.
	StopAtEntry bool
	Stdio       StdioMode
	// FollowForks attaches to children created by fork, vfork and clone(without
	// CLONE_THREAD) automatically; they appear as new processes.
	FollowForks bool
	// DisableASLR runs the program with address randomisation off.
	DisableASLR bool
}

// AttachOptions qualify an attach.
type AttachOptions struct {
	FollowForks bool
	// Stop keeps every thread stopped after the attach; otherwise the process
	// keeps running and is only stopped on request or by an event.
	Stop bool
}

// ProcessIO holds the launched program's ends of its standard streams, for
// StdioPipes (Stdin, Stdout, Stderr) or StdioPty (Pty, the master side).
type ProcessIO struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
	Stderr io.ReadCloser
	Pty    *os.File
}
