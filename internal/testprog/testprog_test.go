package testprog

import (
	"net"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestBuildRunsAndCaches(t *testing.T) {
	p1 := Build(t, Spec{Sources: []string{"hello.c"}, Flags: []string{"-O0"}})
	p2 := Build(t, Spec{Sources: []string{"hello.c"}, Flags: []string{"-O0"}})
	if p1 != p2 {
		t.Fatalf("same spec built twice: %s vs %s", p1, p2)
	}
	p3 := Build(t, Spec{Sources: []string{"hello.c"}, Flags: []string{"-O2"}})
	if p3 == p1 {
		t.Fatalf("different flags share a build")
	}
	out, err := exec.Command(p1, "x").Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("want exit 3, got %v", err)
	}
	if string(out) != "hello 2\n" {
		t.Fatalf("output %q", out)
	}
}

// TestStartAgent: the agent listens where it says.
func TestStartAgent(t *testing.T) {
	a := StartAgent(t)
	c, err := net.DialTimeout("tcp", a.Addr, 10*time.Second)
	if err != nil {
		t.Fatalf("agent at %s: %v", a.Addr, err)
	}
	c.Close()
}

// TestChildrenOf: a process started here is listed as a child of this one,
// which is how StartAgent finds the programs an agent launched.
func TestChildrenOf(t *testing.T) {
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	if got := childrenOf(os.Getpid()); !slices.Contains(got, sleeper.Process.Pid) {
		t.Fatalf("children %v lack %d", got, sleeper.Process.Pid)
	}
	if got := childrenOf(sleeper.Process.Pid); len(got) != 0 {
		t.Fatalf("sleep has children %v", got)
	}
}
