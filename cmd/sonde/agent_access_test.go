package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// syncBuffer is a bytes.Buffer safe for a process writing it while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runningAgent is a `sonde agent` process started by a test.
type runningAgent struct {
	cmd   *exec.Cmd
	addrs []string // as printed: TCP:host:port, UNIX:/path, SSL:host:port
	log   *syncBuffer
}

// startAgent runs the built sonde binary as `sonde agent args...` and
// waits for its n listening lines; it is killed when the test ends.
func startAgent(t *testing.T, n int, args ...string) *runningAgent {
	t.Helper()
	cmd := exec.Command(sondeCLI(t), append([]string{"agent"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a := &runningAgent{cmd: cmd, log: &syncBuffer{}}
	cmd.Stderr = a.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	br := bufio.NewReader(stdout)
	for range n {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("agent %v: no listening line: %v\n%s", args, err, a.log.String())
		}
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "sonde agent listening on ")
		if !ok {
			t.Fatalf("unexpected line %q", line)
		}
		a.addrs = append(a.addrs, addr)
	}
	return a
}

// waitLog waits (bounded) until the agent's log contains all of subs.
func (a *runningAgent) waitLog(t *testing.T, subs ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		log := a.log.String()
		missing := ""
		for _, s := range subs {
			if !strings.Contains(log, s) {
				missing = s
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent log lacks %q:\n%s", missing, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitCount waits (bounded) until the agent's log has sub n times.
func (a *runningAgent) waitCount(t *testing.T, sub string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(a.log.String(), sub) < n {
		if time.Now().After(deadline) {
			t.Fatalf("agent log has %q %d times, want %d:\n%s", sub, strings.Count(a.log.String(), sub), n, a.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// echo dials addr with the Go client and checks a Diagnostics.echo.
func echo(t *testing.T, addr string, opts client.Options) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.Call(ctx, "Diagnostics", "echo", "hi")
	var s string
	if err == nil {
		err = res.Decode(&s)
	}
	if err == nil && s != "hi" {
		t.Fatalf("echo %q", s)
	}
	return err
}

// nobodyUID is the user the tests connect as when they need another user.
const nobodyUID = 65534

// asNobody runs a Python client as user nobody: it connects to addr
// (TCP:host:port or UNIX:/path), sends the agent a Hello unless silent,
// and prints what the agent sent (repr of the bytes) or the error.
func asNobody(t *testing.T, addr string, silent bool) string {
	t.Helper()
	requireRoot(t)
	hello := "True"
	if silent {
		hello = "False"
	}
	script := `
import socket, sys
addr, hello = sys.argv[1], sys.argv[2] == "True"
t, rest = addr.split(":", 1)
try:
    if t == "UNIX":
        s = socket.socket(socket.AF_UNIX); s.connect(rest)
    else:
        h, p = rest.rsplit(":", 1); s = socket.create_connection((h.strip("[]"), int(p)))
    if hello:
        s.sendall(b"E\x00Locator\x00Hello\x00[]\x00\x03\x01")
    s.settimeout(10)
    data = b""
    while True:
        d = s.recv(65536)
        if not d: break
        data += d
        if b"Hello" in data and not hello: break
        if b"Hello" in data and hello and b"\x03\x01" in data: break
    print(repr(data))
except Exception as e:
    print("error:", e)
`
	cmd := exec.Command("/usr/bin/python3", "-c", script, addr, hello)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python as nobody: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// refusedOutput: the agent closed the connection without a byte (a reset
// when the client's Hello was still unread).
func refusedOutput(got string) bool {
	return got == "b''" || strings.Contains(got, "Connection reset") || strings.Contains(got, "Broken pipe")
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3 for the other user's client")
	}
}

// TestAgentServesOnlyItsUser: a loopback TCP or Unix-domain client of
// another user is refused (no Hello, connection closed, reason logged)
// unless --allow-uid names it; the agent's own user is served on both.
func TestAgentServesOnlyItsUser(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "agent.sock")
	a := startAgent(t, 2, "--listen", "TCP:127.0.0.1:0", "--listen", "UNIX:"+sock)
	tcpAddr, unixAddr := a.addrs[0], a.addrs[1]
	if unixAddr != "UNIX:"+sock {
		t.Fatalf("unix address %q", unixAddr)
	}
	st, err := os.Stat(sock)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", st.Mode(), err)
	}
	for _, addr := range []string{strings.TrimPrefix(tcpAddr, "TCP:"), tcpAddr, unixAddr} {
		if err := echo(t, addr, client.Options{}); err != nil {
			t.Fatalf("own user on %s: %v", addr, err)
		}
	}
	// Another user on loopback TCP: nothing of the agent, closed.
	if got := asNobody(t, tcpAddr, false); !refusedOutput(got) {
		t.Errorf("nobody on %s got %s, want the connection closed with nothing sent", tcpAddr, got)
	}
	a.waitLog(t, "refusing connection", "uid 65534 is not the agent's (0)")
	// The socket file's mode keeps other users out; opened up, the
	// SO_PEERCRED check still does.
	if got := asNobody(t, unixAddr, false); !strings.Contains(got, "Permission denied") {
		t.Errorf("nobody on the 0600 socket: %s", got)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got := asNobody(t, unixAddr, false); !refusedOutput(got) {
		t.Errorf("nobody on the opened socket got %s, want nothing", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(a.log.String(), "uid 65534 is not the agent's") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the Unix-domain refusal is not logged:\n%s", a.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	// --allow-uid serves that user too.
	b := startAgent(t, 1, "--listen", "TCP:127.0.0.1:0", "--allow-uid", "65534")
	if got := asNobody(t, b.addrs[0], false); !strings.Contains(got, "Locator") {
		t.Errorf("allowed nobody got %s, want the agent's Hello", got)
	}
}

// TestAgentRefusesRemotePlainTCP: a non-loopback plain TCP listener does
// not start without --insecure (exit 2, pointing at SSL: and --insecure).
func TestAgentRefusesRemotePlainTCP(t *testing.T) {
	for _, l := range []string{"TCP:0.0.0.0:0", "TCP::0", "[::]:0"} {
		_, errOut, code := runCLI(t, "agent", "--listen", l)
		if code != 2 || !strings.Contains(errOut, "SSL:") || !strings.Contains(errOut, "--insecure") {
			t.Errorf("agent --listen %s: exit %d, stderr %q", l, code, errOut)
		}
	}
	_, errOut, code := runCLI(t, "agent", "--listen", "SSL:127.0.0.1:0")
	if code != 2 || !strings.Contains(errOut, "--tls-client-ca") {
		t.Errorf("SSL without certificates: exit %d, stderr %q", code, errOut)
	}
	// --insecure starts it (and says so).
	a := startAgent(t, 1, "--listen", "TCP:0.0.0.0:0", "--insecure")
	a.waitLog(t, "--insecure")
}

// TestAgentHelloTimeoutAndPerPeerLimit: 300 silent connections of another
// (allowed) user hold at most --max-channels-per-peer channels, a fresh
// client of the agent's user is served meanwhile, and silent connections
// are closed once --hello-timeout passes.
func TestAgentHelloTimeoutAndPerPeerLimit(t *testing.T) {
	requireRoot(t)
	a := startAgent(t, 1, "--listen", "TCP:127.0.0.1:0", "--allow-uid", "65534", "--hello-timeout", "60s")
	addr := a.addrs[0]
	script := `
import socket, sys
h, p = sys.argv[1].split(":", 1)[1].rsplit(":", 1)
socks = []
for i in range(300):
    try:
        socks.append(socket.create_connection((h, int(p))))
    except Exception as e:
        print("connect error:", e); break
print("held", len(socks), flush=True)
sys.stdin.read()
`
	hold := exec.Command("/usr/bin/python3", "-c", script, addr)
	hold.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID}}
	stdin, _ := hold.StdinPipe()
	out, _ := hold.StdoutPipe()
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); hold.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "held 300" {
		t.Fatalf("silent client: %q %v", line, err)
	}
	// 128 are served, the other 172 refused (over the per-peer limit, or,
	// when they come faster than the agent admits them, over the bound
	// on connections being admitted).
	a.waitCount(t, "msg=\"refusing ", 300-128)
	if err := echo(t, addr, client.Options{}); err != nil {
		t.Fatalf("fresh client with 300 silent connections open: %v\n%s", err, a.log.String())
	}
	t.Logf("300 silent connections of uid %d: 128 held, %d refused over the per-peer limit, %d while being admitted; a fresh client was served",
		nobodyUID, strings.Count(a.log.String(), "too many open channels from uid:65534"),
		strings.Count(a.log.String(), "too many connections being admitted"))

	// The Hello timeout: a silent connection is closed with a report.
	b := startAgent(t, 1, "--listen", "TCP:127.0.0.1:0", "--hello-timeout", "300ms")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, b.addrs[0], client.Options{NoHello: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("silent connection not closed")
	}
	var eos *tcf.EOSError
	if !errors.As(c.Err(), &eos) || eos.Report == nil || !strings.Contains(eos.Report.Message(), "no Locator Hello") {
		t.Errorf("silent client saw %v", c.Err())
	}
	b.waitLog(t, "no Locator Hello from the peer within 300ms")
	if err := echo(t, b.addrs[0], client.Options{}); err != nil {
		t.Errorf("a client that says Hello: %v", err)
	}
}

// TestAgentUnixSocketFile: a socket file left by a dead agent is replaced,
// anything else at the path is not, and the agent removes its socket when
// it stops.
func TestAgentUnixSocketFile(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	cmd := exec.Command(sondeCLI(t), "agent", "--listen", "UNIX:"+sock)
	stdout, _ := cmd.StdoutPipe()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, "UNIX:"+sock) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("agent on a stale socket: %q %v\n%s", line, err, stderr.String())
	}
	if err := echo(t, "UNIX:"+sock, client.Options{}); err != nil {
		t.Error(err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agent exit: %v\n%s", err, stderr.String())
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after shutdown: %v", err)
	}
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("keep"), 0o600)
	_, errOut, code := runCLI(t, "agent", "--listen", "UNIX:"+plain)
	if code != 1 || !strings.Contains(errOut, "not a socket") {
		t.Errorf("agent on a regular file: exit %d, %q", code, errOut)
	}
	if b, _ := os.ReadFile(plain); string(b) != "keep" {
		t.Error("the regular file was touched")
	}
}
