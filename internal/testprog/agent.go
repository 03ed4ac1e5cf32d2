package testprog

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var sonde struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// Sonde builds the sonde command once per test process and returns its path.
// The binary lives beside the built test programs, in a directory of this
// process's; those of processes that have ended are removed.
func Sonde(t testing.TB) string {
	t.Helper()
	sonde.once.Do(func() {
		root := filepath.Join(os.TempDir(), "sonde-testprog-"+strconv.Itoa(os.Getuid()))
		old, _ := filepath.Glob(filepath.Join(root, "sonde-bin-*"))
		for _, d := range old {
			pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "sonde-bin-"))
			if err == nil && syscall.Kill(pid, 0) == syscall.ESRCH {
				os.RemoveAll(d)
			}
		}
		dir := filepath.Join(root, "sonde-bin-"+strconv.Itoa(os.Getpid()))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			sonde.err = err
			return
		}
		sonde.path = filepath.Join(dir, "sonde")
		build := exec.Command("go", "build", "-o", sonde.path, "./cmd/sonde")
		build.Dir = Root()
		sonde.out, sonde.err = build.CombinedOutput()
	})
	if sonde.err != nil {
		t.Fatalf("go build ./cmd/sonde: %v\n%s", sonde.err, sonde.out)
	}
	return sonde.path
}

// Agent is a `sonde agent` process started by StartAgent.
type Agent struct {
	Cmd  *exec.Cmd
	Addr string // host:port it listens on (loopback)
}

// StartAgent runs `sonde agent` on a free loopback port, its log on the
// test's stderr. At cleanup it is stopped with SIGTERM (SIGKILL after 10 s),
// and then the programs it started are killed: an agent that stops detaches
// from them and leaves them running.
func StartAgent(t testing.TB) *Agent {
	t.Helper()
	cmd := exec.Command(Sonde(t), "agent", "--listen", "TCP:127.0.0.1:0", "--log-level", "error")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopAgent(cmd) })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "sonde agent listening on TCP:")
	if err != nil || !ok {
		t.Fatalf("agent said %q (%v)", line, err)
	}
	return &Agent{Cmd: cmd, Addr: addr}
}

func stopAgent(cmd *exec.Cmd) {
	children := childrenOf(cmd.Process.Pid)
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	for _, pid := range children {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// childrenOf lists the child processes of pid, from every process's stat
// (the kernel's children files are not always built in).
func childrenOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(data), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}
