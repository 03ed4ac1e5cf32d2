package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A process whose thread is in vfork(2) — or in posix_spawn's
// clone(CLONE_VFORK) — sleeps uninterruptibly until the child execs or
// exits: no ptrace stop reaches it before. gdb and eu-stack wait for good;
// sonde waited 30 s and then said the process had exited. Attaching verbs
// now say what is going on and which child to look at instead.

// vforkSyscalls are the system calls a vfork parent sleeps in (x86-64:
// clone, vfork, clone3).
var vforkSyscalls = map[string]bool{"56": true, "58": true, "435": true}

// vforkWaitError is the error for a process with a thread waiting for its
// vfork child, or nil.
type vforkWaitError struct {
	PID, TID int
	Children []string
}

func (e *vforkWaitError) Error() string {
	msg := fmt.Sprintf("process %d cannot be stopped: thread %d is in vfork(), waiting for its child to exec or exit, and no debugger can stop it before then (gdb and eu-stack wait)", e.PID, e.TID)
	if len(e.Children) > 0 {
		msg += fmt.Sprintf("; its child is process %s (sonde stack %s)", strings.Join(e.Children, ", "), e.Children[0])
	}
	return msg
}

// checkVforkWait returns a *vforkWaitError when a thread of pid sleeps in a
// vfork: state D in clone/vfork/clone3, as /proc shows it. Anything it
// cannot read means no.
func checkVforkWait(pid int) error {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, dir := range tasks {
		tid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil || taskStateOf(dir) != 'D' {
			continue
		}
		sc, err := os.ReadFile(dir + "/syscall")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(sc)); len(f) == 0 || !vforkSyscalls[f[0]] {
			continue
		}
		kids, _ := os.ReadFile(dir + "/children")
		return &vforkWaitError{PID: pid, TID: tid, Children: strings.Fields(string(kids))}
	}
	return nil
}

// taskStateOf returns the state letter in dir/stat (a /proc task
// directory), or 0.
func taskStateOf(dir string) byte {
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	return s[i+2]
}
