package main

import "github.com/sondedbg/sonde/unwind"

// markLookahead sets "lookahead" on the frames whose pc the unwinder took
// from a frame-pointer chain without a call before it, because the chain
// above vouched for it (unwind.MethodLookahead: an interpreter's return
// address pushed by hand, as the JVM's): users can tell these frames from
// ones every tool agrees on. The caller's frames and frames line up one for
// one (threadReport).
func markLookahead(trace unwind.Trace, frames []stackFrame) {
	for i := range frames {
		if i >= len(trace.Frames) || i == 0 {
			continue
		}
		// The physical frame below this one found it; inline frames
		// share their physical frame's verdict.
		f, prev := trace.Frames[i], trace.Frames[i-1]
		if f.Physical != prev.Physical && prev.Method == unwind.MethodLookahead {
			frames[i].Lookahead = true
		} else if f.Physical == prev.Physical && frames[i-1].Lookahead {
			frames[i].Lookahead = true
		}
	}
}
