package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/tcf/client"
)

// session is a channel to the agent plus what the scenarios need around it:
// the stops the agent reports, and helpers that start the debuggee and run
// it to a breakpoint. Only the calls the agents have in common are used.
type session struct {
	c *client.Client

	// onStop, when set, receives every stopped context ID on the client's
	// reader goroutine (the event-driven hit loop resumes from there);
	// otherwise stops go to the stops channel.
	onStop atomic.Pointer[func(id string)]
	stops  chan string

	mu      sync.Mutex
	nextBP  int
	started []string // processes this session started, to terminate at the end
}

// opTimeout bounds one step that is not timed (starting a process, running
// to a breakpoint): an agent that does not answer is an error, not a hang.
const opTimeout = 20 * time.Second

func dial(ctx context.Context, addr string, services []string, spin time.Duration) (*session, error) {
	c, err := client.Dial(ctx, addr, client.Options{Services: services, ReadSpin: spin})
	if err != nil {
		return nil, err
	}
	s := &session{c: c, stops: make(chan string, 4096)}
	c.OnEvent("RunControl", "contextSuspended", func(ev client.Event) {
		var id string
		if ev.Args().Len() > 0 && ev.Decode(&id, nil, nil, nil) == nil {
			s.stopped(id)
		}
	})
	// An agent may report the stop of a thread as the stop of its container
	// (containerSuspended: id, pc, reason, params, [suspended ids]).
	c.OnEvent("RunControl", "containerSuspended", func(ev client.Event) {
		var ids []string
		if ev.Decode(nil, nil, nil, nil, &ids) == nil {
			for _, id := range ids {
				s.stopped(id)
			}
		}
	})
	return s, nil
}

func (s *session) stopped(id string) {
	if f := s.onStop.Load(); f != nil {
		(*f)(id)
		return
	}
	select {
	case s.stops <- id:
	default: // nobody is waiting for this many stops: drop
	}
}

// drainStops forgets stops reported so far.
func (s *session) drainStops() {
	for {
		select {
		case <-s.stops:
		default:
			return
		}
	}
}

// waitStop waits until a context whose ID starts with prefix stops and
// returns its ID.
func (s *session) waitStop(prefix string) (string, error) {
	t := time.NewTimer(opTimeout)
	defer t.Stop()
	for {
		select {
		case id := <-s.stops:
			if strings.HasPrefix(id, prefix) {
				return id, nil
			}
		case <-t.C:
			return "", fmt.Errorf("no stop of %s within %v", prefix, opTimeout)
		case <-s.c.Done():
			return "", s.c.Err()
		}
	}
}

// call sends a command, waits for its reply and decodes it into dst. An
// error report in a *error destination is returned as the error.
func (s *session) call(service, command string, args []any, dst ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	r, err := s.c.Call(ctx, service, command, args...)
	if err != nil {
		return fmt.Errorf("%s.%s: %w", service, command, err)
	}
	if err := r.Decode(dst...); err != nil {
		return fmt.Errorf("%s.%s: %w", service, command, err)
	}
	for _, d := range dst {
		if e, ok := d.(*error); ok && *e != nil {
			return fmt.Errorf("%s.%s: %w", service, command, *e)
		}
	}
	return nil
}

// errorOnly decodes a reply that is just an error report.
func (s *session) errorOnly(service, command string, args ...any) error {
	var e error
	return s.call(service, command, args, &e)
}

// startStopped starts prog with args through ProcessesV1.start, stopped at
// main, and returns the process and its main thread.
func (s *session) startStopped(prog string, args ...string) (proc, thread string, err error) {
	abs, err := filepath.Abs(prog)
	if err != nil {
		return "", "", err
	}
	s.drainStops()
	var e error
	var props struct{ ID string }
	params := map[string]any{"Attach": true, "StopAtEntry": false, "StopAtMain": true}
	err = s.call("ProcessesV1", "start",
		[]any{filepath.Dir(abs), abs, append([]string{abs}, args...), os.Environ(), params}, &e, &props)
	if err != nil {
		return "", "", err
	}
	if props.ID == "" {
		return "", "", fmt.Errorf("ProcessesV1.start: no process ID in the reply")
	}
	s.mu.Lock()
	s.started = append(s.started, props.ID)
	s.mu.Unlock()
	// Threads are "P<pid>.<tid>" in both agents.
	thread, err = s.waitStop(props.ID + ".")
	if err != nil {
		return "", "", fmt.Errorf("waiting for %s to stop at main: %w", props.ID, err)
	}
	return props.ID, thread, nil
}

// addBreakpoint plants an enabled breakpoint with the given properties plus
// a fresh ID, and returns the ID. (The C agent leaves a breakpoint without
// "Enabled": true unplanted.)
func (s *session) addBreakpoint(props map[string]any) (string, error) {
	s.mu.Lock()
	s.nextBP++
	id := fmt.Sprintf("tcfbench-%d-%d", os.Getpid(), s.nextBP)
	s.mu.Unlock()
	props["ID"] = id
	props["Enabled"] = true
	return id, s.errorOnly("Breakpoints", "add", props)
}

// resumeToStop resumes thread and waits until it stops again.
func (s *session) resumeToStop(thread string) error {
	s.drainStops()
	if err := s.errorOnly("RunControl", "resume", thread, 0, 1); err != nil {
		return err
	}
	_, err := s.waitStop(thread)
	return err
}

// finish terminates the processes the session started (errors ignored: a
// process may be gone already).
func (s *session) finish() {
	s.mu.Lock()
	procs := s.started
	s.started = nil
	s.mu.Unlock()
	for _, p := range procs {
		s.errorOnly("RunControl", "terminate", p)
	}
}

// symbolAddress is the address of a global with Symbols.find and
// Symbols.getContext.
func (s *session) symbolAddress(thread, name string) (uint64, error) {
	var e error
	var id string
	if err := s.call("Symbols", "find", []any{thread, 0, name}, &e, &id); err != nil {
		return 0, err
	}
	var props struct {
		Address *uint64
	}
	if err := s.call("Symbols", "getContext", []any{id}, &e, &props); err != nil {
		return 0, err
	}
	if props.Address == nil {
		return 0, fmt.Errorf("symbol %s has no Address", name)
	}
	return *props.Address, nil
}

// hasService reports whether the agent's Hello lists name.
func (s *session) hasService(name string) bool {
	for _, n := range s.c.Services() {
		if n == name {
			return true
		}
	}
	return false
}

// cpuMeter reads the agent process's CPU time (0 when no PID was given).
type cpuMeter struct{ pid int }

// ns is the on-CPU time in ns of all threads of the agent, ended ones
// included: the process's CPU-time clock (clock_getcpuclockid(3) of
// another process), one system call. Reading every thread's
// /proc/PID/task/TID/schedstat instead took ~300 µs of the client between
// rounds, long enough for the agent's reader to stop polling for the next
// command, and missed threads that had ended.
func (m cpuMeter) ns() int64 {
	if m.pid <= 0 {
		return 0
	}
	// The kernel's encoding of a process CPU clock: ^pid << 3 | CPUCLOCK_SCHED.
	clock := int32(^m.pid<<3 | 2)
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// selfCPU is this process's on-CPU time in ns, all threads.
func selfCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
