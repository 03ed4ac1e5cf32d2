package main

import (
	"strconv"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// tailFrames counts the tail-call frames of a report.
func tailFrames(r stackReport) (n int) {
	for _, th := range r.Threads {
		for _, f := range th.Frames {
			if f.Kind == "tailcall" {
				n++
			}
		}
	}
	return n
}

// TestStackTailCallsMatchGdb compares sonde's tail-call frames, rebuilt from
// call-site DWARF, with gdb's frame by frame (JSON and text): a chain of two
// tail calls (DWARF 5 and GCC's DWARF 4 extension), an ambiguous chain of
// which gdb rebuilds nothing, and threads blocked in glibc's waits, where
// libc's own tail calls leave frames out (built with -flto too); argument
// lists included, with the entry values recovered through tail-call frames.
func TestStackTailCallsMatchGdb(t *testing.T) {
	for _, tc := range []struct {
		name, source string
		flags        []string
		args         []string
		tails        int // tail-call frames gdb shows; -1: some (how many is glibc's build)
	}{
		{"chain-dwarf5", "uw_tail.c", []string{"-O2", "-gdwarf-5"}, []string{"chain"}, 2},
		{"chain-dwarf4", "uw_tail.c", []string{"-O2", "-gdwarf-4"}, []string{"chain"}, 2},
		{"ambiguous", "uw_tail.c", []string{"-O2"}, []string{"ambiguous"}, 0},
		{"glibc-waits", "stk_waits.c", []string{"-O2"}, nil, -1},
		// GCC's LTO units name the callee of a call to libc through a DIE
		// that reaches its declaration by DW_AT_abstract_origin only.
		{"glibc-waits-lto", "stk_waits.c", []string{"-O2", "-flto"}, nil, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := testprog.Build(t, testprog.Spec{Sources: []string{tc.source}, Flags: tc.flags, Name: "tail-" + tc.name})
			cmd := startStackProgram(t, path, tc.args...)
			pid := strconv.Itoa(cmd.Process.Pid)
			got := sondeStacks(t, pid)
			compareWithGdb(t, got, gdbStacks(t, "-p", pid))
			if n := tailFrames(got); n != tc.tails && (tc.tails >= 0 || n == 0) {
				t.Errorf("%d tail-call frames, want %d", n, tc.tails)
			}
			compareText(t, []string{"stack", pid}, []string{"-p", pid})
		})
	}
}
