package dap

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	godap "github.com/google/go-dap"
	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/internal/testprog"
)

// signalOutcome is what a client sees of one run of dap_signals.c.
type signalOutcome struct {
	stopped    bool   // a stopped event (other than at BP:late) came
	reason     string // its reason
	desc       string // its description
	frame      string // frame 0's function at that stop
	infoID     string // exceptionInfo's exceptionId there
	infoDesc   string // and description
	exitCode   int
	terminated bool // terminated came after exited
}

// newAdapterClient starts an adapter command (sonde dap for newClient,
// lldb-vscode for the comparison) and reads its messages.
func newAdapterClient(t testing.TB, argv ...string) *client {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &client{t: t, cmd: cmd, stdin: stdin, stderr: &strings.Builder{}}
	cmd.Stderr = &lockedWriter{w: c.stderr}
	c.cond = sync.NewCond(&c.mu)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go c.read(stdout)
	t.Cleanup(c.close)
	return c
}

// arrival is m's place in the order messages came (lldb-vscode numbers
// every event 0).
func (c *client) arrival(m godap.Message) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.msgs {
		if x == m {
			return i
		}
	}
	return -1
}

func buildSignalsProg(t testing.TB) string {
	return testprog.Build(t, testprog.Spec{Sources: []string{"dap_signals.c"}, Flags: []string{"-O0"}})
}

// runSignalCase runs dap_signals.c in mode with the given exception
// filters, continues from the stop a signal makes (if any) and returns
// what the client saw up to terminated.
func runSignalCase(t *testing.T, c *client, prog, mode string, filters []string) signalOutcome {
	t.Helper()
	c.initialize()
	c.request("launch", map[string]any{"program": prog, "args": []string{mode}})
	c.event("initialized")
	c.request("setExceptionBreakpoints", map[string]any{"filters": filters})
	if mode == "late" {
		c.request("setBreakpoints", map[string]any{"source": map[string]any{"path": testprog.Source("dap_signals.c")},
			"breakpoints": []map[string]any{{"line": markerLine(t, "dap_signals.c", "late")}}})
	}
	c.request("configurationDone", nil)
	pid := c.event("process").(*godap.ProcessEvent).Body.SystemProcessId
	if mode == "late" {
		st := c.stopped()
		if st.Body.Reason != "breakpoint" {
			t.Fatalf("stopped %+v, want BP:late", st.Body)
		}
		c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
	}
	if mode == "usr1" {
		c.wait("output waiting", func(m godap.Message) bool {
			o, ok := m.(*godap.OutputEvent)
			return ok && strings.Contains(o.Body.Output, "waiting")
		})
		if err := unix.Kill(pid, unix.SIGUSR1); err != nil {
			t.Fatal(err)
		}
	}
	var out signalOutcome
	m := c.wait("stopped or exited", func(m godap.Message) bool {
		e, ok := m.(godap.EventMessage)
		return ok && (e.GetEvent().Event == "stopped" || e.GetEvent().Event == "exited")
	})
	if st, ok := m.(*godap.StoppedEvent); ok {
		out.stopped, out.reason, out.desc = true, st.Body.Reason, st.Body.Description
		if f := c.stack(st.Body.ThreadId); len(f) > 0 {
			out.frame = f[0].Name
		}
		info := c.request("exceptionInfo", map[string]any{"threadId": st.Body.ThreadId}).(*godap.ExceptionInfoResponse)
		out.infoID, out.infoDesc = info.Body.ExceptionId, info.Body.Description
		c.request("continue", map[string]any{"threadId": st.Body.ThreadId})
		m = c.event("exited")
	}
	out.exitCode = m.(*godap.ExitedEvent).Body.ExitCode
	term := c.event("terminated")
	out.terminated = c.arrival(term) > c.arrival(m)
	c.request("disconnect", nil)
	return out
}

// signalCases are the programs of TestFatalSignalStops, with what sonde
// does with the "signals" filter off (want) and on (the last case).
var signalCases = []struct {
	mode    string
	filters []string
	stop    string // "" no stop; else the signal the stop and exceptionInfo name
	frame   string // frame 0's function at the stop
	exit    int
}{
	{"segv", nil, "SIGSEGV", "fault", 128 + 11},
	{"segvcaught", nil, "", "", 42},
	{"abort", nil, "SIGABRT", "", 128 + 6},
	{"usr1", nil, "SIGUSR1", "", 128 + 10},
	{"trap", nil, "SIGTRAP", "", 0}, // swallowed on continue, as gdb and lldb do
	{"pipe", nil, "", "", 0},
	{"late", nil, "", "", 0},
	{"segvcaught", []string{"signals"}, "SIGSEGV", "fault", 42},
}

// TestFatalSignalStops: with the signals filter off a signal that would
// kill the program still stops it (reason exception, naming the signal,
// with the fault address for SIGSEGV) and continuing delivers it (exited
// with 128+signal, then terminated); a caught or ignored signal, a
// handler installed after the first stop included, passes silently; a
// stray SIGTRAP stops and is not delivered (gdb and lldb swallow it). With
// the filter on, a caught SIGSEGV stops too.
func TestFatalSignalStops(t *testing.T) {
	prog := buildSignalsProg(t)
	for _, sc := range signalCases {
		name := sc.mode
		if len(sc.filters) > 0 {
			name += "+" + strings.Join(sc.filters, "+")
		}
		t.Run(name, func(t *testing.T) {
			filters := sc.filters
			if filters == nil {
				filters = []string{}
			}
			out := runSignalCase(t, newClient(t), prog, sc.mode, filters)
			t.Logf("%+v", out)
			if sc.stop == "" {
				if out.stopped {
					t.Errorf("stopped (%s: %s), want the signal to pass", out.reason, out.desc)
				}
			} else {
				if !out.stopped || out.reason != "exception" || !strings.Contains(out.desc, sc.stop) || out.infoID != sc.stop {
					t.Errorf("stop %+v, want an exception stop on %s", out, sc.stop)
				}
				if sc.frame != "" && out.frame != sc.frame {
					t.Errorf("frame 0 %q, want %q", out.frame, sc.frame)
				}
				if sc.stop == "SIGSEGV" && !strings.Contains(out.infoDesc, "0x10") {
					t.Errorf("exceptionInfo %q does not give the fault address 0x10", out.infoDesc)
				}
				fate := "ends the program"
				switch {
				case sc.stop == "SIGTRAP":
					fate = "not delivered"
				case sc.exit < 128:
					fate = "handler runs"
				}
				if !strings.Contains(out.infoDesc, fate) {
					t.Errorf("exceptionInfo %q does not say %q", out.infoDesc, fate)
				}
			}
			if out.exitCode != sc.exit || !out.terminated {
				t.Errorf("exit code %d (terminated after: %v), want %d", out.exitCode, out.terminated, sc.exit)
			}
		})
	}
}

// TestSignalCasesLLDB runs the same cases under lldb-vscode and logs what
// it does, for bench/dap/REAL-PROGRAMS.md's table (SONDE_COMPARE_LLDB=1;
// lldb's behaviour is not sonde's to test).
func TestSignalCasesLLDB(t *testing.T) {
	if os.Getenv("SONDE_COMPARE_LLDB") == "" {
		t.Skip("set SONDE_COMPARE_LLDB=1 to log lldb-vscode's behaviour on the signal cases")
	}
	lldb, err := exec.LookPath("lldb-vscode-14")
	if err != nil {
		t.Skip("no lldb-vscode-14")
	}
	prog := buildSignalsProg(t)
	for _, sc := range signalCases {
		t.Run(sc.mode+strings.Join(sc.filters, "+"), func(t *testing.T) {
			filters := sc.filters
			if filters == nil {
				filters = []string{}
			}
			start := time.Now()
			out := runSignalCase(t, newAdapterClient(t, lldb), prog, sc.mode, filters)
			t.Logf("lldb-vscode %s %v: %+v (%v)", sc.mode, filters, out, time.Since(start))
		})
	}
}
