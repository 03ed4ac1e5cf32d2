package main

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
)

// TestMain makes the test binary the canned agent when -floor's child
// process is asked of it (floor starts os.Executable() again).
func TestMain(m *testing.M) {
	if os.Getenv(cannedEnv) != "" {
		serveCanned()
		return
	}
	os.Exit(m.Run())
}

// TestFloor measures the round against the canned agent, briefly, and
// checks the figure and the client's CPU are there.
func TestFloor(t *testing.T) {
	var out, log bytes.Buffer
	b := &bench{runs: 2, per: 50 * time.Millisecond, out: &report{w: &out, log: &log, tsv: true}}
	if err := b.floor(); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), log.String())
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 4 {
			t.Fatalf("line %q: %d fields, want 4", l, len(f))
		}
		got[f[0]] = f[1]
	}
	for _, k := range []string{"stack57.floor", "stack57.floor.clientcpu"} {
		if v, err := strconv.ParseFloat(got[k], 64); err != nil || v <= 0 {
			t.Errorf("%s = %q, want a positive number\n%s", k, got[k], out.String())
		}
	}
}

// TestAgainstSonde runs every scenario, briefly, against `sonde agent` (built
// with go build) and the debuggee the comparison script uses, and checks
// that each produced a figure (no n/a), that the stack round saw the 57
// frames, and that the agent-CPU figures are there.
func TestAgainstSonde(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sonde and drives real processes")
	}
	prog := testprog.Build(t, testprog.Spec{Sources: []string{"agent_prog.c"}, Flags: []string{"-g", "-gdwarf-4", "-O0", "-pthread"}})
	agent := testprog.StartAgent(t)

	var out, log bytes.Buffer
	b := &bench{
		addr:     agent.Addr,
		prog:     prog,
		src:      testprog.Source("agent_prog.c"),
		runs:     2,
		per:      50 * time.Millisecond,
		agentPID: agent.Cmd.Process.Pid,
		out:      &report{w: &out, log: &log, tsv: true},
	}
	if err := b.run(nil); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), log.String())
	}
	t.Logf("\n%s%s", out.String(), log.String())
	got := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 4 {
			t.Fatalf("line %q: %d fields, want 4", l, len(f))
		}
		got[f[0]] = f[1:]
	}
	for _, key := range []string{"echo", "pipelined64", "memget.base64", "memget.zerocopy", "hit", "stack57.warm", "stack57.afterStop", "stack57.stopToStack"} {
		for _, k := range []string{key, key + ".agentcpu"} {
			f, ok := got[k]
			if !ok {
				t.Errorf("no %s figure", k)
				continue
			}
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil || v <= 0 {
				t.Errorf("%s = %q (%s), want a positive number", k, f[0], f[2])
			}
		}
	}
	if note := got["stack57.warm"]; len(note) == 3 && !strings.HasPrefix(note[2], "57 frames, ") {
		t.Errorf("stack round: %s, want 57 frames", note[2])
	}
	if log.Len() > 0 {
		t.Errorf("remarks: %s", log.String())
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := append([]float64(nil), c.in...)
		if got := median(in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("median reordered its argument: %v", in)
			}
		}
	}
}

func TestNumbers(t *testing.T) {
	for _, c := range []struct {
		v          float64
		num, human string
	}{
		{0.72149, "0.721", "0.721"},
		{5.6789, "5.679", "5.68"},
		{83.14, "83.14", "83.1"},
		{147.26, "147.3", "147"},
		{16543.2, "16543", "16.5k"},
		{464123, "464123", "464k"},
		{2.5e6, "2500000", "2.50M"},
	} {
		if got := num(c.v); got != c.num {
			t.Errorf("num(%v) = %q, want %q", c.v, got, c.num)
		}
		if got := human(c.v); got != c.human {
			t.Errorf("human(%v) = %q, want %q", c.v, got, c.human)
		}
	}
}

// TestCPUMeter: the meter reads another process's CPU time, which grows
// while it computes (a shell busy for a moment).
func TestCPUMeter(t *testing.T) {
	cmd := exec.Command("sh", "-c", `i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; read x`)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	m := cpuMeter{cmd.Process.Pid}
	first := m.ns()
	deadline := time.Now().Add(10 * time.Second)
	for m.ns() < first+10_000_000 { // 10 ms of CPU
		if time.Now().After(deadline) {
			t.Fatalf("the busy process's CPU time stayed at %d ns (first %d)", m.ns(), first)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if (cpuMeter{}).ns() != 0 {
		t.Fatal("a meter without a process reads non-zero")
	}
}
