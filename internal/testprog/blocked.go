package testprog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// WaitBlocked waits until every thread of process pid sleeps inside a system
// call (state S, /proc/PID/task/TID/syscall naming a call, not "running"),
// for tests that capture a program twice (a core and a live walk, maps and a
// core) and need it not to move in between. A program that printed "ready"
// still has to return from the write and enter its blocking call: a moment
// on a quiet machine, tens of milliseconds or more on a loaded one, so a
// fixed sleep is not enough. It fails the test after a minute.
func WaitBlocked(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		blocked, why := allBlocked(pid)
		if blocked {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d: its threads did not all block in a system call within a minute (%s)", pid, why)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// allBlocked reports whether every thread of pid sleeps in a system call, or
// which thread does not.
func allBlocked(pid int) (bool, string) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil || len(tasks) == 0 {
		return false, "no threads listed"
	}
	for _, task := range tasks {
		stat, err1 := os.ReadFile(filepath.Join(task, "stat"))
		call, err2 := os.ReadFile(filepath.Join(task, "syscall"))
		if err1 != nil || err2 != nil {
			return false, fmt.Sprintf("%s unreadable", task)
		}
		s := string(stat)
		j := strings.LastIndexByte(s, ')')
		if j < 0 || j+2 >= len(s) || s[j+2] != 'S' {
			return false, fmt.Sprintf("%s not sleeping", filepath.Base(task))
		}
		if f := strings.Fields(string(call)); len(f) == 0 || f[0] == "running" || f[0] == "-1" {
			return false, fmt.Sprintf("%s not in a system call (%q)", filepath.Base(task), strings.TrimSpace(string(call)))
		}
	}
	return true, ""
}
