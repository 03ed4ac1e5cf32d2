package ptrace

import (
	"errors"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestWatchpointsTrap: the in-memory probe's answer agrees with testprog's
// independent check (a gcc-built program and an execution breakpoint in
// DR0), so a front end can say honestly whether a watchpoint will fire.
func TestWatchpointsTrap(t *testing.T) {
	err := WatchpointsTrap()
	works, why := testprog.HardwareDebugWorks()
	switch {
	case works && err != nil:
		t.Errorf("debug registers trap (testprog), the probe says: %v", err)
	case !works && !errors.Is(err, ErrNoWatchTrap):
		t.Errorf("debug registers do not trap (testprog: %s), the probe says: %v", why, err)
	}
	t.Logf("watchpoints trap: %v (%v)", err == nil, err)
	if WatchpointsTrap() != err {
		t.Error("a second call answered differently")
	}
}
