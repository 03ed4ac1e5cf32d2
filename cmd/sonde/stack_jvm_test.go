package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sondedbg/sonde/internal/testprog"
)

// jdkTool finds a tool of Debian's OpenJDK 17 (scripts/setup installs
// openjdk-17-jdk-headless), or of the JDK on PATH.
func jdkTool(t *testing.T, name string) string {
	t.Helper()
	if p := "/usr/lib/jvm/java-17-openjdk-amd64/bin/" + name; isFile(p) {
		return p
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed (scripts/setup installs openjdk-17-jdk-headless)", name)
	}
	return p
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// TestStackThroughJVM runs a Java program (testdata/UwJava.java, compiled
// here) whose main thread blocks in Thread.sleep at the bottom of a chain
// of calls, level1 and level3 compiled by the JIT (-Xbatch, nothing
// inlined), main, level2 and level4 kept interpreted; a second thread spins
// in the same chain. With
// the process stopped, every thread's walk (main, spinner, GC, compiler
// and the JVM's other threads) must equal eu-stack's pc by pc. HotSpot's
// interpreter pushes its return addresses without a call, so the walk
// through interpreted frames relies on the frame-pointer look-ahead
// (unwind/lookahead.go), which the JSON marks ("lookahead"); compiled
// frames are named from the perf map the JVM writes for `jcmd PID
// Compiler.perfmap`.
//
// With -XX:+PreserveFramePointer every Java frame is in the chain. By
// default compiled code does not set rbp, so the frame pointer a compiled
// method passes on is its caller's: both tools then skip the caller of each
// compiled frame (interpreted level2 and main) — the same frames.
func TestStackThroughJVM(t *testing.T) {
	if _, err := exec.LookPath("eu-stack"); err != nil {
		t.Skip("eu-stack not installed (scripts/setup installs elfutils)")
	}
	java, javac, jcmd := jdkTool(t, "java"), jdkTool(t, "javac"), jdkTool(t, "jcmd")
	classes := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, javac, "-J-XX:-UsePerfData", "-d", classes, testprog.Source("UwJava.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	for _, mode := range []string{"PreserveFramePointer", "default"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"-XX:-UsePerfData", "-Xbatch", "-Xmx64m",
				"-XX:CompileCommand=quiet", "-XX:CompileCommand=exclude,UwJava::level2",
				"-XX:CompileCommand=exclude,UwJava::level4", "-XX:CompileCommand=exclude,UwJava::main",
				"-XX:CompileCommand=dontinline,UwJava::*"}
			if mode == "PreserveFramePointer" {
				args = append(args, "-XX:+PreserveFramePointer")
			}
			pid := startJVM(t, java, append(args, "-cp", classes, "UwJava", "spin")...)
			jctx, jcancel := context.WithTimeout(context.Background(), time.Minute)
			defer jcancel()
			if out, err := exec.CommandContext(jctx, jcmd, "-J-XX:-UsePerfData", strconv.Itoa(pid), "Compiler.perfmap").CombinedOutput(); err != nil {
				t.Fatalf("jcmd Compiler.perfmap: %v\n%s", err, out)
			}
			stopProcess(t, pid)
			got := sondeStacks(t, "--past-main", "--no-inline", "--no-args", strconv.Itoa(pid))
			want := euStackPCsAll(t, pid)
			if len(got.Threads) != len(want) || len(got.Threads) < 10 {
				t.Errorf("%d threads, eu-stack %d", len(got.Threads), len(want))
			}
			for _, th := range got.Threads {
				checkJVMThread(t, th, want[th.TID], mode)
			}
		})
	}
}

// checkJVMThread compares one thread with eu-stack's pcs and checks what
// the main thread's Java frames must be.
func checkJVMThread(t *testing.T, th threadStack, want []string, mode string) {
	t.Helper()
	var pcs []string
	var names []string // the frames in no file, as named from the perf map
	lookahead, callHelper := 0, false
	for _, f := range th.Frames {
		if f.Kind == "tailcall" {
			continue // eu-stack shows physical frames
		}
		pcs = append(pcs, f.PC)
		name := ""
		if f.Function != nil {
			name = *f.Function
		}
		if f.Module == "" {
			names = append(names, name)
		}
		if f.Lookahead {
			lookahead++
			if f.Module != "" {
				t.Errorf("thread %d: frame %d in %s taken by look-ahead: only code in no file may be", th.TID, f.Index, f.Module)
			}
		}
		callHelper = callHelper || strings.HasPrefix(name, "JavaCalls::call_helper")
	}
	got, eu := strings.Join(pcs, " "), strings.Join(want, " ")
	if got != eu {
		// A thread stopped running Java code at a ret (or at an entry,
		// before push %rbp) has its return address at [sp]: sonde takes
		// it there, eu-stack follows rbp and skips that caller.
		if th.Name == "spinner" && len(pcs) == len(want)+1 && pcs[0] == want[0] &&
			strings.Join(pcs[2:], " ") == strings.Join(want[1:], " ") {
			t.Logf("thread %d (%s): frame 0 %s before its frame is set up: sonde has its caller %s, eu-stack skips it", th.TID, th.Name, pcs[0], pcs[1])
		} else {
			t.Errorf("thread %d (%s): sonde %v\n eu-stack %v\n%s", th.TID, th.Name, pcs, want, dumpSonde(th))
		}
	}
	// Compiled code run without -XX:+PreserveFramePointer may hold
	// anything in rbp: the running spinner's walk may end there, in both
	// tools (compared above).
	loose := th.Name == "spinner" && mode != "PreserveFramePointer"
	if len(pcs) > 1 && th.StopReason != "outermost" && !loose {
		t.Errorf("thread %d (%s): stop %s %s\n%s", th.TID, th.Name, th.StopReason, th.Error, dumpSonde(th))
	}
	isMain := false
	for _, f := range th.Frames {
		isMain = isMain || f.Function != nil && *f.Function == "JVM_Sleep"
	}
	if th.Name == "spinner" && !callHelper && !loose {
		t.Errorf("spinner thread: the walk does not reach JavaCalls::call_helper\n%s", dumpSonde(th))
	}
	if !isMain {
		return
	}
	// JVM_Sleep ← the interpreter's native frame (Thread.sleep) ← level4
	// ← level3 ← [level2 ← ] level1 ← [main ← ] the call stub.
	joined := strings.Join(names, " | ")
	for _, fn := range []string{"long UwJava.level3(long)", "long UwJava.level1(long)", "StubRoutines (1)"} {
		if !strings.Contains(joined, fn) {
			t.Errorf("main thread: no frame named %q; JIT frames: %s\n%s", fn, joined, dumpSonde(th))
		}
	}
	if lookahead == 0 || !strings.HasPrefix(joined, "Interpreter | Interpreter | long UwJava.level3(long)") {
		t.Errorf("main thread: %d frames by look-ahead, want interpreted frames\n%s", lookahead, dumpSonde(th))
	}
	if mode == "PreserveFramePointer" {
		// level2 and main, interpreted, between the compiled frames.
		i3, i1 := strings.Index(joined, "level3"), strings.Index(joined, "level1")
		if i3 < 0 || i1 < 0 || !strings.Contains(joined[i3:i1], "Interpreter") || !strings.Contains(joined[i1:], "Interpreter") {
			t.Errorf("main thread: want interpreted frames above level3 and level1; JIT frames: %s\n%s", joined, dumpSonde(th))
		}
	}
	if !callHelper {
		t.Errorf("main thread: the walk does not reach JavaCalls::call_helper\n%s", dumpSonde(th))
	}
}

// euStackPCsAll is euStackPCs for a process where eu-stack cannot unwind
// some thread: it then says so and exits with status 1, after the others.
func euStackPCsAll(t *testing.T, pid int) map[int][]string {
	t.Helper()
	out, err := exec.Command("eu-stack", "-p", strconv.Itoa(pid)).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1 && strings.Contains(string(out), "TID ")) {
		t.Fatalf("eu-stack: %v\n%s", err, out)
	}
	return parseEuStack(string(out))
}

// startJVM starts java with args, waits for its "ready" line, and arranges
// for the JVM to end with the test: SIGTERM (it removes its attach socket
// and perf map file then), SIGKILL after a while, and the files removed.
func startJVM(t *testing.T, java string, args ...string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, java, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Process.Signal(syscall.SIGCONT)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		cancel()
		os.Remove(fmt.Sprintf("/tmp/perf-%d.map", pid))
		os.Remove(fmt.Sprintf("/tmp/.java_pid%d", pid))
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
		// Keep reading: a full pipe would block the JVM.
		buf := make([]byte, 4096)
		for {
			if _, err := out.Read(buf); err != nil {
				return
			}
		}
	}()
	select {
	case line := <-ready:
		if line != "ready\n" {
			t.Fatalf("java %v did not get ready: %q", args, line)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("java %v: no ready line in 2 minutes", args)
	}
	// The main thread prints ready, then calls Thread.sleep.
	time.Sleep(200 * time.Millisecond)
	return pid
}

// stopProcess stops pid with SIGSTOP and waits until every thread is
// stopped, so that sonde and eu-stack see one state.
func stopProcess(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 400; i++ {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		all := len(tasks) > 0
		for _, st := range tasks {
			data, _ := os.ReadFile(st)
			s := string(data)
			if j := strings.LastIndexByte(s, ')'); j < 0 || j+2 >= len(s) || s[j+2] != 'T' {
				all = false
			}
		}
		if all {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("process %d: threads did not all stop", pid)
}
