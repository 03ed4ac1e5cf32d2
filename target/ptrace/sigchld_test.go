package ptrace

import "testing"

// The backend quiets the SIGCHLD of ptrace-stops (SA_NOCLDSTOP) and keeps
// the action's handler; every live test then checks that stops are still
// seen.
func TestQuietStops(t *testing.T) {
	before, err := sigchldAction(nil)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	after, err := sigchldAction(nil)
	if err != nil {
		t.Fatal(err)
	}
	if after.flags&saNoCldStop == 0 {
		t.Fatalf("SIGCHLD flags %#x after New: no SA_NOCLDSTOP", after.flags)
	}
	before.flags |= saNoCldStop
	if after != before {
		t.Fatalf("SIGCHLD action %+v -> %+v: more than SA_NOCLDSTOP changed", before, after)
	}
}
