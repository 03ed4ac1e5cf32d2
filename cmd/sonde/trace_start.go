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
