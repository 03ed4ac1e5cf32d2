package ptrace

import "testing"

// The backend quiets the SIGCHLD of ptrace-stops (SA_NOCLDSTOP) and keeps
// the action's handler; every live test then checks that stops are still
// seen.
func TestQuietStops(t *testing.T) {
	before, err := sigchldFlags()
	if err != nil {
		t.Fatal(err)
	}
	tg, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	after, err := sigchldFlags()
	if err != nil {
		t.Fatal(err)
	}
	if after&saNoCldStop == 0 {
		t.Fatalf("SIGCHLD flags %#x after New: no SA_NOCLDSTOP", after)
	}
	if after&^saNoCldStop != before&^saNoCldStop {
		t.Fatalf("SIGCHLD flags %#x -> %#x: more than SA_NOCLDSTOP changed", before, after)
	}
}
