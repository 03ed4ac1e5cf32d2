package services_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf/client"
)

// Breakpoint hit + resume, the way an event-driven client runs it (the Python
// client's dispatch thread, Eclipse): the contextSuspended handler itself
// sends the next resume, without waiting for replies in between.
// BenchmarkBreakpointHitResume is the same cycle from a client that waits
// for each reply (Call) before it waits for the stop.
//
// BenchmarkBreakpointHitResumeEvents runs that client in the test process,
// beside the agent; .../clientProcess runs it in a process of its own (this
// test binary, re-executed), as real clients are, so that the agent's
// goroutines do not share the Go scheduler with the client's.

// hitClientEnv carries "address thread hits" to the re-executed client.
const hitClientEnv = "SONDE_HIT_CLIENT"

func TestMain(m *testing.M) {
	if spec := os.Getenv(hitClientEnv); spec != "" {
		os.Exit(runHitClient(spec))
	}
	os.Exit(m.Run())
}

// runHitClient is the client process: it prints the hits per second.
func runHitClient(spec string) int {
	var addr, thread string
	var n int
	if _, err := fmt.Sscan(spec, &addr, &thread, &n); err != nil {
		fmt.Fprintln(os.Stderr, "bad", hitClientEnv, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	elapsed, err := hitLoop(ctx, c, thread, n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(float64(n) / elapsed.Seconds())
	return 0
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

func BenchmarkBreakpointHitResumeEvents(b *testing.B) {
	la := startLive(b)
	_, thread := la.stoppedAtMain("loop", "1000000000")
	la.ok("Breakpoints", "add", map[string]any{"ID": "bench", "Location": "hit"})
	b.Run("inProcess", func(b *testing.B) {
		c, _ := la.dial()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		b.ResetTimer()
		elapsed, err := hitLoop(ctx, c, thread, b.N)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "hits/s")
	})
	b.Run("clientProcess", func(b *testing.B) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d", hitClientEnv, la.addr, thread, b.N))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("client process: %v", err)
		}
		rate, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		if err != nil {
			b.Fatalf("client process said %q", out)
		}
		// The client times the loop itself (its start-up is not a hit).
		b.ReportMetric(rate, "hits/s")
	})
}
