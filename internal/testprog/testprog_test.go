package testprog

import (
	"os/exec"
	"testing"
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
