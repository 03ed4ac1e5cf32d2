package main

import (
	"fmt"

	"github.com/sondedbg/sonde/session"
	"github.com/sondedbg/sonde/target"
)

// startAddress returns where a launched program is run to before the
// probes go in (see runToMain): the ELF entry of a dynamically linked
// executable, main of a static one, or its entry when it has no main.
func startAddress(sess *session.Session, proc *target.Context) (uint64, error) {
	mods, err := sess.Modules(proc)
	if err != nil {
		return 0, err
	}
	if mods.Interpreter() == nil {
		if a, err := sess.MainAddress(proc); err == nil {
			return a, nil
		}
	}
	a, err := sess.EntryAddress(proc)
	if err != nil {
		return 0, fmt.Errorf("neither main nor the entry point found: %w", err)
	}
	return a, nil
}

// alreadyAt reports whether a thread of proc (stopped) is at pc: a
// breakpoint there would be stepped over by the resume, never reported.
func alreadyAt(proc *target.Context, pc uint64) bool {
	for _, th := range proc.Children() {
		if th.IsProcess() {
			continue
		}
		if regs, err := th.Registers(); err == nil && regs.PC() == pc {
			return true
		}
	}
	return false
}
