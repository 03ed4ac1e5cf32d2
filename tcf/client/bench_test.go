package client_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/internal/tcftest"
	"github.com/sondedbg/sonde/tcf/client"
)

// TestMain turns the test binary into the canned agent when asked to (see
// startCannedProcess).
func TestMain(m *testing.M) {
	if os.Getenv(cannedEnv) == "" {
		os.Exit(m.Run())
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(l.Addr())
	tcftest.CannedStackServer().Serve(l)
}

const cannedEnv = "SONDE_TCF_CANNED_AGENT"

// startCannedProcess runs the canned agent as a process of its own (this
// test binary again) and returns its address.
func startCannedProcess(b *testing.B) string {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), cannedEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("canned agent: %v", err)
	}
	return strings.TrimSpace(line)
}

// BenchmarkStackRound is a client's 57-frame stack round
// (tcftest.StackRound, as BenchmarkStack57 in tcf/services issues it)
// against the canned agent: "inprocess" with the agent in this process (the
// allocations and a CPU profile's client share are the figures to read),
// "process" with the agent in a process of its own, which makes it the
// floor under BenchmarkStack57Process/warm (the same round against `sonde
// agent`): what the client, the framework and the hops between the two
// processes take with an agent that does no work.
func BenchmarkStackRound(b *testing.B) {
	b.Run("inprocess", func(b *testing.B) {
		srv := tcftest.CannedStackServer()
		benchStackRound(b, serve(b, srv))
	})
	b.Run("process", func(b *testing.B) {
		benchStackRound(b, startCannedProcess(b))
	})
}

func benchStackRound(b *testing.B, addr string) {
	c, err := client.DialTimeout(addr, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	cpu0 := processCPU(b)
	for b.Loop() {
		names := tcftest.StackRound(b, c, tcftest.CannedThread)
		if len(names) != 57 || names[0] != "deep" {
			b.Fatalf("%d frames, top %q", len(names), names[0])
		}
	}
	// With the agent in a process of its own, this process's CPU time is
	// the client's: what a round costs the client whatever the agent.
	b.ReportMetric(float64(processCPU(b)-cpu0)/1e3/float64(b.N), "cpu-µs/op")
}

// processCPU is this process's CPU time so far, in ns (all threads).
func processCPU(b *testing.B) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		b.Fatal(err)
	}
	return ts.Nano()
}
