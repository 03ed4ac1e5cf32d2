package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

func TestParseListenAddr(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		loopback bool
	}{
		{"TCP:127.0.0.1:1534", "127.0.0.1:1534", true},
		{"tcp:localhost:0", "localhost:0", true},
		{"127.0.0.1:99", "127.0.0.1:99", true},
		{"TCP:[::1]:1534", "[::1]:1534", true},
		{"[::1]:1534", "[::1]:1534", true},
		{"TCP::1534", ":1534", false},
		{"TCP:0.0.0.0:1534", "0.0.0.0:1534", false},
		{"TCP:192.168.1.2:1534", "192.168.1.2:1534", false},
		{"TCP:example.org:1534", "example.org:1534", false},
	} {
		got, err := parseListenAddr(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseListenAddr(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			continue
		}
		if lb := isLoopback(got); lb != tc.loopback {
			t.Errorf("isLoopback(%q) = %v, want %v", got, lb, tc.loopback)
		}
	}
	for _, bad := range []string{"foo", "UDP:1.2.3.4:5", "PIPE:x:y", "TCP:1.2.3.4", "1.2.3.4:"} {
		if got, err := parseListenAddr(bad); err == nil {
			t.Errorf("parseListenAddr(%q) = %q, want an error", bad, got)
		}
	}
}

// TestAgentHelperProcess is not a test: TestAgentServesAndShutsDown runs the
// test binary again with it to get a real `sonde agent` process.
func TestAgentHelperProcess(t *testing.T) {
	if os.Getenv("SONDE_AGENT_HELPER") != "1" {
		t.Skip("helper process for TestAgentServesAndShutsDown")
	}
	os.Exit(runAgent([]string{"--listen", "TCP:127.0.0.1:0", "--log-level", "debug"}))
}

// TestAgentServesAndShutsDown runs `sonde agent` as a process, talks to it
// with the Go client, then sends SIGTERM: the client must be told the agent
// is shutting down and the process must exit 0.
func TestAgentServesAndShutsDown(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestAgentHelperProcess$")
	cmd.Env = append(os.Environ(), "SONDE_AGENT_HELPER=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no listening line: %v\n%s", err, stderr.String())
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "sonde agent listening on TCP:")
	if !ok {
		t.Fatalf("unexpected first line %q", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.Services(); !slices.Contains(got, "Diagnostics") || !slices.Contains(got, "Locator") {
		t.Fatalf("services %v", got)
	}
	res, err := c.Call(ctx, "Diagnostics", "echo", "hi")
	var s string
	if err != nil || res.Decode(&s) != nil || s != "hi" {
		t.Fatalf("echo: %q %v", s, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("agent did not close the channel after SIGTERM")
	}
	var eos *tcf.EOSError
	if !errors.As(c.Err(), &eos) || eos.Report == nil || eos.Report.Code != tcf.CodeChannelClosed {
		t.Errorf("client saw %v, want an end-of-stream report with code %d", c.Err(), tcf.CodeChannelClosed)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agent exit: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "agent stopped") {
		t.Errorf("log lacks the shutdown line:\n%s", stderr.String())
	}
}

// TestAgentReadSpinFlag: a negative --read-spin is a usage error (exit 2).
func TestAgentReadSpinFlag(t *testing.T) {
	_, errOut, code := runCLI(t, "agent", "--listen", "TCP:127.0.0.1:0", "--read-spin", "-1ms")
	if code != 2 || !strings.Contains(errOut, "--read-spin must not be negative") {
		t.Fatalf("agent --read-spin -1ms: exit %d, stderr %q", code, errOut)
	}
}
