package ptrace

import (
	"testing"

	"github.com/sondedbg/sonde/target"
)

// TestStopTheWorldThreads: eight threads hitting one breakpoint that is
// stepped in place (displaced stepping off: every hit stops the world) give
// the uninstrumented output, every hit counted, and no stop at all reaches
// the model. Statuses of other threads that arrive while one thread's hit
// is handled must be handled in their order: a hit's stop of the others
// used to miss a status consumed in the same batch (it sat in a local list),
// wait 2 s for a stop that had already happened, take the thread for held,
// restart it, and only then handle that old status (a SIGTRAP with
// unreadable registers: reported as a signal at pc 0).
func TestStopTheWorldThreads(t *testing.T) {
	path := build(t, "tp_dstep.c")
	const n = "60"
	want := uninstrumented(t, path, "threads", n)
	run := runDstep(t, path, []string{"threads", n}, []string{"ds_riprel"}, func(b *Backend) { b.noDisplaced = true }, nil)
	// The checksum (whether the 9th thread got to run is the scheduler's).
	if run.exit.Code != 0 || checksum(run.stdout) == "" || checksum(run.stdout) != checksum(want) {
		t.Errorf("output %q exit %v, want %q", run.stdout, run.exit, want)
	}
	if run.hits != 8*60 {
		t.Errorf("%d hits, want %d", run.hits, 8*60)
	}
	if run.stats.held == 0 || run.stats.stepped != 0 {
		t.Errorf("stats %+v: want every hit stepped in place, the others held", run.stats)
	}
	for _, e := range run.events {
		if e.Kind == target.EventStopped && e.Context.Parent() != nil && e.Reason != nil && e.Reason.Kind != target.ReasonUser {
			t.Errorf("unexpected stop: %s", describe(e))
		}
	}
	t.Logf("%d hits, %d threads held", run.hits, run.stats.held)
}
