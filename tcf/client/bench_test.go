package client_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/internal/tcftest"
	"github.com/sondedbg/sonde/tcf"
	"github.com/sondedbg/sonde/tcf/client"
)

// cannedThread is the thread whose stack cannedStackServer describes.
const cannedThread = "P12345.12345"

// cannedStackServer serves the commands of a stack round (StackTrace,
// Symbols, LineNumbers) with fixed answers shaped like sonde's for a
// 57-frame stack, so that a benchmark of the round measures the client,
// the framework and the hops between them, not symbol lookups.
func cannedStackServer() *tcf.Server {
	const frames = 57
	var ids, props []string
	for i := range frames {
		ids = append(ids, fmt.Sprintf("%q", fmt.Sprintf("FP%d.%s", i, cannedThread)))
		props = append(props, fmt.Sprintf(`{"ID":"FP%d.%s","ParentID":"%s","ProcessID":"P12345","Index":%d,"Level":%d,"TopFrame":%v,"Walk":true,"IP":%d,"FP":140736104913832}`,
			i, cannedThread, cannedThread, i, frames-1-i, i == frames-1, 94085057888609+uint64(i)*37))
	}
	slices.Reverse(ids) // bottom first
	children := []byte("[" + strings.Join(ids, ",") + "]")
	contexts := []byte("[" + strings.Join(props, ",") + "]")
	area := []byte(`[{"SAddr":94085057888948,"EAddr":94085057888952,"File":"agent_prog.c","Dir":"/work/main/testdata","SLine":58,"SCol":42,"ELine":58,"ECol":57,"IsStmt":true,"NAddr":94085057888952,"NStmtAddr":94085057888952}]`)
	symbol := []byte(`{"Address":94085057888948,"Class":3,"ID":"F@P12345@5591e27442b4@0","Name":"deep","OwnerID":"P12345","Size":22,"TypeClass":8,"UpdatePolicy":0}`)

	srv := tcf.NewServer(tcf.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	st := srv.Service("StackTrace")
	st.Command("getChildren", func(c *tcf.Call) {
		c.Args().Skip()
		c.Reply().Null().RawJSON(children).Send()
	})
	st.Command("getContext", func(c *tcf.Call) {
		c.Args().Skip()
		c.Reply().RawJSON(contexts).Null().Send()
	})
	sym := srv.Service("Symbols")
	sym.Command("findByAddr", func(c *tcf.Call) {
		a := c.Args()
		a.Skip()
		addr := a.Uint64()
		c.Reply().Null().String("F@P12345@" + strconv.FormatUint(addr, 16) + "@0").Send()
	})
	sym.Command("getContext", func(c *tcf.Call) {
		c.Args().Skip()
		c.Reply().Null().RawJSON(symbol).Send()
	})
	srv.Service("LineNumbers").Command("mapToSource", func(c *tcf.Call) {
		c.Args().Skip()
		c.Reply().Null().RawJSON(area).Send()
	})
	return srv
}

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
	cannedStackServer().Serve(l)
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
		srv := cannedStackServer()
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
		names := tcftest.StackRound(b, c, cannedThread)
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
