package services_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf/client"
)

// BenchmarkBreakpointHitResumeEvents is breakpoint hit + resume the way an
// event-driven client runs it (the Python client's dispatch thread, Eclipse):
// the contextSuspended handler itself sends the next resume, without waiting
// for replies in between. BenchmarkBreakpointHitResume is the same cycle from
// a client that waits for each reply (Call) before it waits for the stop.
// Both run the client in the test process, beside the agent (which also has
// the test's own recording client connected); bench/tcf/tcfbench measures
// the cycle with one client in a process of its own, against sonde and the
// C agent alike.
func BenchmarkBreakpointHitResumeEvents(b *testing.B) {
	la := startLive(b)
	_, thread := la.stoppedAtMain("loop", "1000000000")
	la.ok("Breakpoints", "add", map[string]any{"ID": "bench", "Location": "hit"})
	c, _ := la.dial()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.ResetTimer()
	elapsed, err := hitLoop(ctx, c, thread, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "hits/s")
}

// hitLoop resumes thread n times, each from the handler of its stop.
func hitLoop(ctx context.Context, c *client.Client, thread string, n int) (time.Duration, error) {
	done := make(chan struct{})
	failed := make(chan error, 1)
	hits := 0
	resume := func() {
		if _, err := c.SendNow("RunControl", "resume", thread, 0, 1); err != nil {
			select {
			case failed <- err:
			default:
			}
		}
	}
	c.OnEvent("RunControl", "contextSuspended", func(client.Event) {
		if hits++; hits == n {
			close(done)
			return
		}
		resume()
	})
	start := time.Now()
	resume()
	select {
	case <-done:
		return time.Since(start), nil
	case err := <-failed:
		return 0, err
	case <-ctx.Done():
		return 0, fmt.Errorf("%d of %d hits: %w", hits, n, ctx.Err())
	}
}
