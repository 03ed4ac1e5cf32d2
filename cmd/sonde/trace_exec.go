package main

import (
	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/translate/probes"
)

// execFunctions are libc's entries to the exec system calls (execv, execvp,
// execl... call execve; fexecve calls execveat).
var execFunctions = []string{"execve", "execveat"}

// snapshotAtExec plants internal breakpoints on the exec functions that
// keep the counters' values before an exec replaces the address space (at
// the exec event the old one, and its code cache, are gone: bash's `exec
// PROG` reported 0 hits). It returns what removes them. A sonde killed
// with SIGKILL leaves these int3s: used for launched programs only.
func snapshotAtExec(sess *session.Session, tg *target.Target, proc *target.Context, set *probes.Set) (remove func()) {
	var bps []*target.Breakpoint
	for _, name := range execFunctions {
		addrs, err := sess.FunctionAddresses(proc, name)
		if err != nil {
			continue
		}
		addrs, _ = sess.CalledAddresses(proc, name, addrs)
		for _, a := range addrs {
			if sess.InInterpreter(proc, []uint64{a}) {
				continue
			}
			bp, err := tg.SetBreakpoint(proc, target.BreakpointSpec{Addr: a, Kind: target.BreakpointSoftware, Internal: true,
				OnHit: func(*target.Context, *target.Breakpoint) *target.SuspendReason {
					set.Snapshot()
					return nil
				}})
			if err == nil {
				bps = append(bps, bp)
			}
		}
	}
	return func() {
		for _, bp := range bps {
			tg.RemoveBreakpoint(bp)
		}
	}
}
