package target

import (
	"sync"
	"testing"
	"time"
)

// TestSyncListener: a synchronous listener sees every event before the
// reporting call returns, in order, numbered from 1; ordinary listeners see
// the same events with the same numbers, later, on another goroutine — also
// the last ones, which the synchronous listener said it handled (they come
// by the lazy timer, with nothing urgent after them).
func TestSyncListener(t *testing.T) {
	tg := New(nullBackend{})
	var mu sync.Mutex
	var syncSeqs, asyncSeqs []uint64
	var syncKinds []EventKind
	tg.AddSyncListener(func(e Event) bool {
		syncSeqs = append(syncSeqs, e.Seq) // under the queue's lock: no mutex needed
		syncKinds = append(syncKinds, e.Kind)
		return e.Kind == EventStopped || e.Kind == EventStarted
	})
	done := make(chan struct{})
	tg.AddListener(func(e Event) {
		mu.Lock()
		asyncSeqs = append(asyncSeqs, e.Seq)
		n := len(asyncSeqs)
		mu.Unlock()
		if n == 4 {
			close(done)
		}
	})
	p := tg.AddProcess(100, nil, "p")
	if len(syncSeqs) != 1 || syncKinds[0] != EventCreated {
		t.Fatalf("after AddProcess the sync listener saw %v %v", syncSeqs, syncKinds)
	}
	th := tg.AddThread(p, 100, nil, "")
	tg.Stopped(th, &SuspendReason{Kind: ReasonBreakpoint}, 0x1000)
	tg.Started(th)
	want := []EventKind{EventCreated, EventCreated, EventStopped, EventStarted}
	if len(syncKinds) != len(want) {
		t.Fatalf("sync listener saw %v, want %v", syncKinds, want)
	}
	for i := range want {
		if syncKinds[i] != want[i] || syncSeqs[i] != uint64(i+1) {
			t.Fatalf("sync event %d: %v #%d, want %v #%d", i, syncKinds[i], syncSeqs[i], want[i], i+1)
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ordinary listener did not get the events")
	}
	mu.Lock()
	defer mu.Unlock()
	for i, s := range asyncSeqs {
		if s != syncSeqs[i] {
			t.Fatalf("ordinary listener saw #%d as event %d, sync listener #%d", s, i, syncSeqs[i])
		}
	}
}

// A listener that panics loses its event, not the process: the other
// listeners get it, and the next events come as usual (a panic on the
// tracer thread or the queue's goroutine would end the agent with its
// breakpoints planted).
func TestListenerPanic(t *testing.T) {
	tg := New(nullBackend{})
	got := make(chan EventKind, 8)
	var syncSaw []EventKind
	tg.AddSyncListener(func(e Event) bool {
		if e.Kind == EventStopped {
			panic("sync listener")
		}
		return false
	})
	tg.AddSyncListener(func(e Event) bool {
		syncSaw = append(syncSaw, e.Kind)
		return false
	})
	tg.AddListener(func(e Event) {
		if e.Kind == EventStopped {
			panic("listener")
		}
	})
	tg.AddListener(func(e Event) { got <- e.Kind })
	p := tg.AddProcess(100, nil, "p")
	th := tg.AddThread(p, 100, nil, "")
	tg.Stopped(th, &SuspendReason{Kind: ReasonBreakpoint}, 0x1000)
	tg.Started(th)
	want := []EventKind{EventCreated, EventCreated, EventStopped, EventStarted}
	for i, k := range want {
		select {
		case g := <-got:
			if g != k {
				t.Fatalf("event %d: %v, want %v", i, g, k)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d (%v) did not come", i, k)
		}
	}
	if len(syncSaw) != len(want) {
		t.Fatalf("second sync listener saw %v, want %v", syncSaw, want)
	}
}
