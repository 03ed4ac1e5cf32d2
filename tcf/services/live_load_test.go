package services_test

import (
	"bufio"
	"context"
	"debug/elf"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
	"github.com/sondedbg/sonde/tcf/client"
)

// The agent's load and fault test (issue 20): the built `sonde agent` under
// many clients, a 1,000-thread target, fork and exec storms, clients that
// drop in the middle of their commands, and SIGTERM at random points. Every
// part is bounded in count and time; what it asserts is that nothing is lost
// (every reply and event arrives), nothing is left stopped or traced, and the
// agent's memory and descriptors stay bounded. SONDE_LOAD_SEED replays the
// random choices of a run (its seed is logged).

const (
	loadClients    = 100  // concurrent clients doing round trips
	loadRoundTrips = 50   // round trips each
	loadThreads    = 1000 // threads of the big target
	loadChildren   = 40   // processes per fork or exec storm
	loadDroppers   = 20   // clients dropped mid-command
	loadTerms      = 4    // agents SIGTERMed at a random point
	loadMaxRSS     = 256 << 20
)

func TestAgentLoadAndFaults(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("SONDE_LOAD_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (SONDE_LOAD_SEED replays it)", seed)
	rng := rand.New(rand.NewSource(seed))
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"ld_storm.c"}, Flags: []string{"-O0"}})
	agent, la := agentProcess(t)
	apid := agent.Process.Pid
	baseFDs := fdCount(apid)
	t.Logf("agent at start: RSS %d KiB, %d descriptors", rssKiB(apid), baseFDs)

	t.Run("RoundTrips", func(t *testing.T) { loadRoundTripsRun(t, la.addr) })
	t.Logf("after %d clients: RSS %d KiB", loadClients, rssKiB(apid))
	t.Run("Threads1000", func(t *testing.T) { loadThreadsRun(t, la, prog) })
	t.Logf("after %d threads: RSS %d KiB", loadThreads, rssKiB(apid))
	t.Run("ForkExecStorms", func(t *testing.T) { loadStormsRun(t, la, prog) })
	t.Run("DroppedMidCommand", func(t *testing.T) { loadDroppedRun(t, la, prog, rng) })

	// Bounded: descriptors back to where they were (every dropped channel's
	// socket closed; the two storm programs' stdio streams are kept for a
	// late reader, streamExpiry), memory under the cap.
	eventually(t, "agent descriptors back to the start", func() (bool, string) {
		n := fdCount(apid)
		return n <= baseFDs+2*3+2, fmt.Sprintf("%d descriptors, %d at start", n, baseFDs)
	})
	if rss := rssKiB(apid); rss<<10 > loadMaxRSS {
		t.Errorf("agent RSS %d KiB after the load, cap %d MiB", rss, loadMaxRSS>>20)
	} else {
		t.Logf("agent after the load: RSS %d KiB, %d descriptors", rss, fdCount(apid))
	}
	t.Run("SIGTERM", func(t *testing.T) { loadTermRun(t, prog, rng) })
}

// loadRoundTripsRun: loadClients clients connect at once and each makes
// loadRoundTrips echo round trips with its own payloads; every reply must be
// its own.
func loadRoundTripsRun(t *testing.T, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, loadClients)
	for i := 0; i < loadClients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := client.Dial(ctx, addr, client.Options{})
			if err != nil {
				errs <- fmt.Errorf("client %d: %v", i, err)
				return
			}
			defer c.Close()
			for j := 0; j < loadRoundTrips; j++ {
				want := fmt.Sprintf("client %d trip %d %s", i, j, strings.Repeat("x", j*13))
				r, err := c.Call(ctx, "Diagnostics", "echo", want)
				var got string
				if err == nil {
					err = r.Decode(&got)
				}
				if err != nil || got != want {
					errs <- fmt.Errorf("client %d trip %d: got %q, %v", i, j, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// loadThreadsRun attaches to a process of loadThreads+1 threads, resumes,
// suspends and resumes it, and detaches: every thread is reported, stopped
// and started each time, and released at the end.
func loadThreadsRun(t *testing.T, la *liveAgent, prog string) {
	cmd := exec.Command(prog, "threads", strconv.Itoa(loadThreads))
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.HasPrefix(line, "ready") {
		t.Fatalf("ld_storm said %q (%v)", line, err)
	}
	pid := cmd.Process.Pid
	proc := "P" + strconv.Itoa(pid)
	all := func(want string) func() (bool, string) {
		return func() (bool, string) {
			states := taskStates(pid)
			n := 0
			for _, s := range states {
				if (s == "t") == (want == "t") {
					n++
				}
			}
			return n == loadThreads+1 && len(states) == loadThreads+1,
				fmt.Sprintf("%d of %d threads %s", n, len(states), want)
		}
	}
	la.ok("Processes", "attach", proc)
	if ids := la.threadsOf(proc); len(ids) != loadThreads+1 {
		t.Fatalf("%d threads reported, want %d", len(ids), loadThreads+1)
	}
	eventually(t, "all stopped after attach", all("t"))
	la.ok("RunControl", "resume", proc, 0, 1)
	eventually(t, "all running after resume", all("running"))
	m := la.events.mark()
	la.ok("RunControl", "suspend", proc)
	eventually(t, "all stopped after suspend", all("t"))
	// Every thread's stop reaches the client.
	seen := map[string]bool{}
	la.events.wait(t, m, "a contextSuspended for every thread", func(e event) bool {
		if e.Service == "RunControl" && e.Name == "contextSuspended" {
			seen[e.str(0)] = true
		}
		return len(seen) == loadThreads+1
	})
	for _, id := range la.threadsOf(proc)[:10] {
		if !la.isSuspended(id) {
			t.Errorf("%s not suspended for the agent", id)
		}
	}
	la.ok("RunControl", "resume", proc, 0, 1)
	eventually(t, "all running after the second resume", all("running"))
	la.ok("Processes", "detach", proc)
	eventually(t, "released after detach", released(t, pid))
}

// loadStormsRun launches a program that forks (then one that forks and
// execs) loadChildren processes at once, with AttachChildren and a
// breakpoint whose condition is never true in the code every child runs:
// every child is reported and exits as it should, and the parent sees them
// all exit 7 (none died of a breakpoint trap, none was lost or left stopped).
func loadStormsRun(t *testing.T, la *liveAgent, prog string) {
	m := la.events.mark()
	la.ok("Breakpoints", "add", map[string]any{"ID": "storm", "Location": "work", "Condition": "storm_work < 0"})
	la.statusOf(m, "storm")
	defer la.ok("Breakpoints", "remove", []string{"storm"})
	for _, mode := range []string{"forks", "execs"} {
		m := la.events.mark()
		proc, _ := la.startProcess(prog, []string{mode, strconv.Itoa(loadChildren)},
			map[string]any{"StopAtEntry": false, "StopAtMain": false, "AttachChildren": true})
		if code := la.exitCode(m, proc); code != 0 {
			t.Errorf("%s: the parent exited %d: some child did not exit 7", mode, code)
		}
		children := map[string]bool{}
		for _, e := range la.events.since(m) {
			if e.Service == "Processes" && e.Name == "exited" && e.str(0) != proc {
				if code := e.Raw[1]; code != "7" {
					t.Errorf("%s: child %s exited %s", mode, e.str(0), code)
				}
				children[e.str(0)] = true
			}
		}
		if len(children) != loadChildren {
			t.Errorf("%s: %d children reported exited, want %d", mode, len(children), loadChildren)
		}
	}
}

// loadDroppedRun: clients send a burst of commands about a process (attach,
// suspend, breakpoints, stacks, memory) and drop without waiting for the
// replies, at random moments. Then a fresh client is served, the process is
// untraced and running, and none of their breakpoints is left.
func loadDroppedRun(t *testing.T, la *liveAgent, prog string, rng *rand.Rand) {
	cmd := exec.Command(prog, "threads", "8")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.HasPrefix(line, "ready") {
		t.Fatalf("ld_storm said %q (%v)", line, err)
	}
	pid := cmd.Process.Pid
	proc := "P" + strconv.Itoa(pid)
	thread := mainThread(proc)
	var wg sync.WaitGroup
	for i := 0; i < loadDroppers; i++ {
		delay := time.Duration(rng.Intn(3000)) * time.Microsecond
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := client.Dial(ctx, la.addr, client.Options{})
			if err != nil {
				t.Errorf("dropper %d: %v", i, err)
				return
			}
			c.Send("Processes", "attach", proc)
			c.Send("Breakpoints", "add", map[string]any{"ID": "drop" + strconv.Itoa(i), "Location": "work"})
			c.Send("RunControl", "suspend", thread)
			c.Send("StackTrace", "getChildren", thread)
			c.Send("Memory", "get", proc, uint64(0x400000), 1, 65536, 0)
			c.Send("RunControl", "resume", thread, 0, 1)
			c.Send("RunControl", "suspend", proc)
			time.Sleep(delay)
			c.Close()
		}()
	}
	wg.Wait()
	eventually(t, "released after every client that touched it dropped", released(t, pid))
	// (A dropper whose commands came after the holder's close held nothing
	// and may still be closing.)
	eventually(t, "every dropped client's breakpoints gone", func() (bool, string) {
		var e error
		var ids []string
		la.decode("Breakpoints", "getIDs", nil, &e, &ids)
		for _, id := range ids {
			if strings.HasPrefix(id, "drop") {
				return false, fmt.Sprint(ids)
			}
		}
		return true, ""
	})
	var echo string
	if err := la.call("Diagnostics", "echo", "still here").Decode(&echo); err != nil || echo != "still here" {
		t.Errorf("echo after the drops: %q, %v", echo, err)
	}
}

// loadTermRun: an agent attached to a process, with breakpoints planted and a
// client busy suspending, resuming and reading it, gets SIGTERM at a random
// moment: it exits 0 and the process is untraced, running and unpatched.
func loadTermRun(t *testing.T, prog string, rng *rand.Rand) {
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	workAddr := symbolAddr(t, prog, "work")
	for round := 0; round < loadTerms; round++ {
		delay := time.Duration(rng.Intn(400)) * time.Millisecond
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			t.Logf("SIGTERM after %v", delay)
			agent, la := agentProcess(t)
			cmd := exec.Command(prog, "threads", "16")
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			bufio.NewReader(out).ReadString('\n')
			pid := cmd.Process.Pid
			proc := "P" + strconv.Itoa(pid)
			thread := mainThread(proc)
			busy := make(chan struct{})
			go func() {
				defer close(busy)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				c := la.c
				call := func(svc, cmd string, args ...any) bool {
					_, err := c.Call(ctx, svc, cmd, args...)
					return err == nil
				}
				if !call("Processes", "attach", proc) || !call("Breakpoints", "add", map[string]any{"ID": "w", "Location": "work"}) {
					return
				}
				for call("RunControl", "resume", proc, 0, 1) &&
					call("RunControl", "suspend", thread) &&
					call("StackTrace", "getChildren", thread) &&
					call("Registers", "getChildren", thread) {
				}
			}()
			time.Sleep(delay)
			if err := agent.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- agent.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("agent exit after SIGTERM: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("agent still running 20 s after SIGTERM")
			}
			<-busy
			eventually(t, "released after the agent's SIGTERM", released(t, pid))
			if !freeze(cmd.Process) {
				t.Fatalf("the program is gone")
			}
			if got, want := codeByte(t, pid, workAddr+exeLoadBias(t, pid, prog)), fileByte(t, f, workAddr); got != want {
				t.Errorf("work() starts with %#x, the file has %#x", got, want)
			}
		})
	}
}

// fdCount is the number of open descriptors of pid.
func fdCount(pid int) int {
	ents, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	return len(ents)
}

// rssKiB is the resident set of pid in KiB.
func rssKiB(pid int) int {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}
