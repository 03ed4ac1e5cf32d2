package services_test

import (
	"testing"
	"time"

	"github.com/sondedbg/sonde/target"
)

// TestLiveNewThreadsAddedBeforeTheirStops: threads that hit a breakpoint as
// soon as they exist are announced (contextAdded, sent by the agent's
// ordinary listener) before their stop (contextSuspended, which the
// synchronous listener sends from the tracer thread when nothing is pending
// before it), and every stop of a thread comes after its resume.
func TestLiveNewThreadsAddedBeforeTheirStops(t *testing.T) {
	la := startLive(t)
	proc, thread := la.stoppedAtMain("threads")
	// A slow ordinary listener holds up the ordinary listeners' queue after
	// each start, so the new threads' contextAdded waits in it while they
	// stop: their stops must wait too.
	la.tgt.AddListener(func(e target.Event) {
		if e.Kind == target.EventStarted {
			time.Sleep(50 * time.Millisecond)
		}
	})
	m := la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "spin", "Enabled": true, "Location": "spin"})
	la.ok("RunControl", "resume", thread, 0, 1)
	// Four new threads and main enter spin() once each (it never returns).
	seen := map[string]int{}
	deadline := time.Now().Add(30 * time.Second)
	next := m
	for len(seen) < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("stops per thread %v", seen)
		}
		e, n := la.events.wait(t, next, "a stop in spin", is("RunControl", "contextSuspended", ""))
		next = n
		id, _ := e.Args[0].(string)
		if seen[id]++; seen[id] == 1 {
			la.ok("RunControl", "resume", id, 0, 1)
		}
	}
	la.ok("RunControl", "suspend", proc)
	added := map[string]bool{mainThread(proc): true}
	running := map[string]bool{}
	for _, e := range la.events.since(m) {
		if e.Service != "RunControl" {
			continue
		}
		switch e.Name {
		case "contextAdded":
			for _, c := range e.Args[0].([]any) {
				if id, _ := c.(map[string]any)["ID"].(string); id != "" {
					added[id] = true
					running[id] = true // a new thread starts out running
				}
			}
		case "contextResumed":
			id, _ := e.Args[0].(string)
			running[id] = true
		case "contextSuspended":
			id, _ := e.Args[0].(string)
			if !added[id] {
				t.Fatalf("%s stopped before it was added:\n%s", id, dump(la.events.since(m)))
			}
			if !running[id] {
				t.Fatalf("%s stopped twice without a resume between:\n%s", id, dump(la.events.since(m)))
			}
			running[id] = false
		}
	}
}
