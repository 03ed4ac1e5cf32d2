package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sondedbg/sonde/internal/gdbtest"
	"github.com/sondedbg/sonde/internal/testprog"
)

// TestHelpGoesToStdout: `sonde VERB --help` prints its usage on stdout (so
// `sonde stack --help | less` shows it) and exits 0, for every verb; a usage
// error prints two short lines on stderr (not the whole usage) and exits 2.
func TestHelpGoesToStdout(t *testing.T) {
	if len(verbs) < 5 {
		t.Fatalf("only %d verbs registered", len(verbs))
	}
	for _, v := range verbs {
		for _, h := range []string{"--help", "-h"} {
			out, errOut, code := runCLI(t, v.name, h)
			if code != 0 || !strings.HasPrefix(out, "usage: sonde "+v.name) || errOut != "" {
				t.Errorf("sonde %s %s: exit %d, stdout %q, stderr %q", v.name, h, code, out, errOut)
			}
		}
		out, errOut, code := runCLI(t, v.name, "--no-such-flag")
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "sonde "+v.name+": ") || strings.Contains(errOut, "usage: sonde") {
			t.Errorf("sonde %s --no-such-flag: exit %d, stdout %q, stderr %q", v.name, code, out, errOut)
		}
	}
	out, errOut, code := runCLI(t, "--help")
	if code != 0 || !strings.Contains(out, "verbs:") || errOut != "" {
		t.Errorf("sonde --help: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out, errOut, code := runCLI(t); code != 2 || out != "" || !strings.Contains(errOut, "verbs:") {
		t.Errorf("sonde: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestAttachPermissionHint: attaching to another user's process as an
// unprivileged user fails with one line that says why and what to do.
func TestAttachPermissionHint(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run sonde as another user")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	// The binary where user nobody can run it.
	dir, err := os.MkdirTemp("", "sonde-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "sonde")
	copyFile(t, sondeCLI(t), bin)
	os.Chmod(bin, 0o755)
	victim := exec.Command("sleep", "30")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { victim.Process.Kill(); victim.Wait() }()
	pid := strconv.Itoa(victim.Process.Pid)
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "stack", pid)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("sonde stack as nobody: %v\nstdout %s\nstderr %s", err, stdout.String(), stderr.String())
	}
	msg := stderr.String()
	for _, want := range []string{"cannot attach to process " + pid, "operation not permitted", "belongs to user root (uid 0)", "uid 65534", "CAP_SYS_PTRACE"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	if n := strings.Count(strings.TrimSpace(msg), "\n"); n != 0 {
		t.Errorf("%d lines on stderr, want one:\n%s", n+1, msg)
	}
	waitForState(t, victim.Process.Pid, 'S') // untouched

	// Another debugger attached: says which.
	if _, err := exec.LookPath("gdb"); err == nil {
		out, _ := gdbtest.Run("-p", pid, "-ex", "shell "+bin+" stack "+pid)
		if !strings.Contains(string(out), "already traced by process") || !strings.Contains(string(out), "(gdb)") {
			t.Errorf("attach while gdb is attached:\n%s", out)
		}
	}
}

// TestSymbolizeNotELF: a file that is not ELF is named as such, not as a
// parser's "bad magic number".
func TestSymbolizeNotELF(t *testing.T) {
	src := filepath.Join(testprog.Root(), "testdata", "hello.c")
	_, errOut, code := runCLI(t, "symbolize", "-e", src, "0x10")
	if code != 1 || !strings.Contains(errOut, src+" is not an ELF file") || strings.Contains(errOut, "magic") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestSymbolizeJSONKeepsAngleBrackets: C++ template names in --json keep
// their < and > (not \u003c).
func TestSymbolizeJSONKeepsAngleBrackets(t *testing.T) {
	path := testprog.Build(t, testprog.Spec{Sources: []string{"sym_cxx.cc"}, Flags: []string{"-O0"}, Name: "sym_cxx-O0"})
	out, err := exec.Command("nm", "-C", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	addr := ""
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if f := strings.SplitN(sc.Text(), " ", 3); len(f) == 3 && (f[1] == "T" || f[1] == "W") && strings.Contains(f[2], "<") {
			addr = "0x" + f[0]
			break
		}
	}
	if addr == "" {
		t.Fatalf("no template function in %s", path)
	}
	js, errOut, code := runCLI(t, "symbolize", "-e", path, "-f", "-C", "--json", addr)
	if code != 0 || !strings.Contains(js, "<") || strings.Contains(js, `\u003c`) || strings.Contains(js, `\u003e`) {
		t.Errorf("symbolize --json %s: exit %d %s\n%s", addr, code, errOut, js)
	}
}
