package main

import (
	"fmt"
	"path/filepath"

	"github.com/sondedbg/sonde/target"
)

// numberedThread is a thread with the number gdb gives it: 1 for the first
// thread it found (a live process's main thread, a core's first NT_PRSTATUS),
// counting up in the order threads were found.
type numberedThread struct {
	*target.Context
	num int
}

// gdbThreadOrder returns proc's threads in the order gdb's `thread apply all
// bt` prints them, highest number first; text and JSON both use it. With
// onlyTID it returns that thread alone, or an error naming the threads there
// are.
func gdbThreadOrder(proc *target.Context, onlyTID int) ([]numberedThread, error) {
	children := proc.Children()
	var out []numberedThread
	for i := len(children) - 1; i >= 0; i-- {
		if onlyTID != 0 && children[i].TID() != onlyTID {
			continue
		}
		out = append(out, numberedThread{children[i], i + 1})
	}
	if onlyTID != 0 && len(out) == 0 {
		tids := make([]int, len(children))
		for i, c := range children {
			tids[i] = c.TID()
		}
		return nil, fmt.Errorf("process %d has no thread %d (its threads: %v)", proc.PID(), onlyTID, tids)
	}
	return out, nil
}

// debugDirsFor is where separate debug files are looked for: the user's
// directories first, then the sysroot's /usr/lib/debug (a copy of the
// crashed machine has its debug files there, as gdb assumes), then the
// system's.
func debugDirsFor(user []string, sysroot string) []string {
	dirs := append([]string{}, user...)
	if sysroot != "" {
		dirs = append(dirs, filepath.Join(sysroot, "usr/lib/debug"))
	}
	return append(dirs, "/usr/lib/debug")
}
