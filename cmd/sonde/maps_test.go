package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
)

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// sondeCLI builds the sonde command once per test run and returns its path.
func sondeCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sonde-cli-")
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(dir, "sonde")
		out, err := exec.Command("go", "build", "-o", cliPath, ".").CombinedOutput()
		if err != nil {
			cliErr = &buildError{err, out}
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliPath
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + string(e.out) }

// runCLI runs sonde with args and returns stdout, stderr and the exit code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(sondeCLI(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// startBlocked starts tp_threads (every thread blocked in a system call) and
// waits until it is ready.
func startBlocked(t *testing.T) *exec.Cmd {
	t.Helper()
	path := testprog.Build(t, testprog.Spec{Sources: []string{"tp_threads.c"}, Flags: []string{"-O2"}})
	cmd := exec.Command(path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := make([]byte, 64)
	if n, err := out.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "ready") {
		t.Fatalf("tp_threads did not start: %q %v", buf[:n], err)
	}
	return cmd
}

// procStateLetter returns the state letter and tracer of a process.
func procStateLetter(t *testing.T, pid int) (byte, string) {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var state byte
	tracer := ""
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "State:"); ok {
			state = strings.TrimSpace(v)[0]
		}
		if v, ok := strings.CutPrefix(l, "TracerPid:"); ok {
			tracer = strings.TrimSpace(v)
		}
	}
	return state, tracer
}

func waitForState(t *testing.T, pid int, want byte) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if s, tr := procStateLetter(t, pid); s == want && tr == "0" {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	s, tr := procStateLetter(t, pid)
	t.Fatalf("process %d: state %c tracer %s, want %c untraced", pid, s, tr, want)
}

func TestMapsMatchesProc(t *testing.T) {
	cmd := startBlocked(t)
	pid := cmd.Process.Pid
	out, errOut, code := runCLI(t, "maps", strconv.Itoa(pid))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Fatalf("sonde maps differs from /proc/%d/maps:\n%s\n---\n%s", pid, out, want)
	}
	waitForState(t, pid, 'S')
	js, _, code := runCLI(t, "maps", "--json", strconv.Itoa(pid))
	var m mapsJSON
	if err := json.Unmarshal([]byte(js), &m); err != nil || code != 0 {
		t.Fatalf("json: %v (exit %d)", err, code)
	}
	if m.PID != pid || len(m.Regions) != strings.Count(string(want), "\n") || !strings.HasPrefix(m.Regions[0].Start, "0x") {
		t.Fatalf("json: pid %d, %d regions", m.PID, len(m.Regions))
	}
}

func TestMapsAndRegsUsageAndErrors(t *testing.T) {
	for _, verb := range []string{"maps", "regs"} {
		if _, errOut, code := runCLI(t, verb); code != 2 || !strings.Contains(errOut, "for usage.") {
			t.Errorf("%s without PID: exit %d, %q", verb, code, errOut)
		}
		if _, _, code := runCLI(t, verb, "notapid"); code != 2 {
			t.Errorf("%s notapid: exit %d", verb, code)
		}
		if _, _, code := runCLI(t, verb, "--bogus", "1"); code != 2 {
			t.Errorf("%s --bogus: exit %d", verb, code)
		}
		_, errOut, code := runCLI(t, verb, "1073741800")
		if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "no such process") {
			t.Errorf("%s on a missing pid: exit %d, %q", verb, code, errOut)
		}
	}
}
