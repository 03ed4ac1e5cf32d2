package main

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	godap "github.com/google/go-dap"
)

// TestDAPListen: sonde dap refuses a non-loopback TCP address, serves a
// client on a Unix socket (printing where on stderr, nothing on stdout)
// and ends at SIGTERM.
func TestDAPListen(t *testing.T) {
	out, errOut, code := runCLI(t, "dap", "--listen", "TCP:0.0.0.0:4711")
	if code != 2 || out != "" || !strings.Contains(errOut, "non-loopback") {
		t.Errorf("non-loopback listen: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	sock := filepath.Join(t.TempDir(), "dap.sock")
	cmd := exec.Command(sondeCLI(t), "dap", "--listen", "UNIX:"+sock)
	stderr, _ := cmd.StderrPipe()
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil || !strings.Contains(line, "UNIX:"+sock) {
		t.Fatalf("first stderr line %q, %v", line, err)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"seq":1,"type":"request","command":"initialize","arguments":{"adapterID":"sonde"}}`
	fmt.Fprintf(conn, "Content-Length: %d\r\n\r\n%s", len(body), body)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	m, err := godap.ReadProtocolMessage(bufio.NewReader(conn))
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := m.(*godap.InitializeResponse); !ok || !r.Success || !r.Body.SupportsConfigurationDoneRequest {
		t.Errorf("initialize over the socket: %#v", m)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("sonde dap did not end at SIGTERM")
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout: %q", stdout.String())
	}
}
