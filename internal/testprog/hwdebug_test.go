package testprog

import "testing"

// TestHardwareDebugProbe runs the probe; on a machine without debug-register
// traps it reports the skip, which is the information this test gives.
func TestHardwareDebugProbe(t *testing.T) {
	RequireHardwareDebug(t)
	t.Log("hardware debug registers trap on this machine")
}
