package dap

import (
	"context"
	"runtime/trace"

	"github.com/sondedbg/sonde/target"
)

// prefetch walks a thread's stack and builds its top frame's environment
// (scopes, arguments, locals) right after its stop is reported: every
// client asks for them next (stackTrace, then scopes of frame 0), and the
// time the stopped event takes to reach it and its request to come back
// (a few hundred microseconds through a pipe) is enough for the walk. The
// request then finds the stop's walk done, or waits for it under the stop's
// lock, as it would have waited for doing it itself. What is prefetched
// is what a request would compute for this stop (the walk is kept for the
// stop's life either way); values are not read ahead: a variables request
// reads them when it comes.
func (d *debuggee) prefetch(th *target.Context) {
	defer d.s.recoverIn("prefetch")
	defer trace.StartRegion(context.Background(), "prefetch").End() // SONDE_TRACE shows whether a stackTrace waited for it
	if _, st, err := d.trace(th); err != nil || st == nil {
		return // running again, or gone
	}
	d.env(th, 0)
}
