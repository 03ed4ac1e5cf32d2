package dap

import "time"

// A stop's prefetch (prefetch.go) runs on a goroutine that has done one
// before: a new goroutine starts with a small stack, and the walk's and the
// scope lookup's depth grew it by copying several times, a fifth of a
// warm prefetch's CPU. A worker that has finished waits warmIdle for the
// next piece of work and then ends, so none is left once the stops stop.

// warmIdle is how long an idle worker waits for more work.
const warmIdle = 2 * time.Second

// warmWork hands work to an idle worker (unbuffered: only one waiting takes it).
var warmWork = make(chan func())

// runWarm runs f on an idle worker, or on a new one when none is idle.
func runWarm(f func()) {
	select {
	case warmWork <- f:
	default:
		go warmWorker(f)
	}
}

func warmWorker(f func()) {
	idle := time.NewTimer(warmIdle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(warmIdle)
		select {
		case f = <-warmWork:
		case <-idle.C:
			return
		}
	}
}
