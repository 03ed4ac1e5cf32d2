package services_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestPythonClientInterop runs scripts/tcf-python-interop: the Eclipse TCF
// Python client drives `sonde agent` through a complete debug session. The
// client is not part of sonde; the test runs when TCF_PYTHON_DIR names its
// python/ directory (see the script's header for how to get it).
func TestPythonClientInterop(t *testing.T) {
	dir := os.Getenv("TCF_PYTHON_DIR")
	if dir == "" {
		t.Skip("TCF_PYTHON_DIR is not set: the Eclipse TCF Python client is needed " +
			"(git clone https://github.com/eclipse-tcf/tcf; TCF_PYTHON_DIR=<clone>/python)")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	if testing.Short() {
		t.Skip("builds sonde and runs a whole session; skipped with -short")
	}
	cmd := exec.Command(filepath.Join(testprog.Root(), "scripts", "tcf-python-interop"))
	cmd.Env = append(os.Environ(), "TCF_PYTHON_DIR="+dir)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the Python client session failed: %v", err)
	}
}
