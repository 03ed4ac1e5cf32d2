package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/ptrace"
)

// attachLive attaches to a running process with every thread stopped, for a
// one-shot verb. close detaches (the process continues as it was, a job-control
// stopped one stays stopped); SIGINT and SIGTERM detach too before sonde exits.
// before, when given, runs on the new target before the attach (a verb
// starts reading symbols ahead there: stack_prepare.go).
func attachLive(pid int, before ...func(*target.Target)) (*openedTarget, error) {
	if err := checkVforkWait(pid); err != nil {
		return nil, err // (vfork.go)
	}
	t, err := ptrace.New()
	if err != nil {
		return nil, err
	}
	for _, f := range before {
		f(t)
	}
	proc, err := t.Attach(pid, target.AttachOptions{Stop: true})
	if err != nil {
		t.Close()
		return nil, attachError(pid, err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			t.Close()
			fmt.Fprintf(os.Stderr, "sonde: %v: detached from %d\n", s, pid)
			os.Exit(1)
		case <-done:
		}
	}()
	return &openedTarget{target: t, process: proc, close: func() {
		close(done)
		signal.Stop(sigs)
		t.Close()
	}}, nil
}
