package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/sondedbg/sonde/internal/tcftest"
)

// The floor: the warm 57-frame stack round against an agent that answers
// from canned replies and does no work (tcftest.CannedStackServer), in a
// process of its own. No agent's round can be shorter with this client on
// this machine: what an agent's round takes beyond it is the agent's share.

// cannedEnv makes this binary the canned agent (floor's child process).
const cannedEnv = "TCFBENCH_CANNED_AGENT"

// serveCanned runs the canned agent on a loopback port it prints first,
// until its standard input ends: the parent holds the other end, so the
// agent goes with it however it ends.
func serveCanned() {
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcfbench: canned agent:", err)
		os.Exit(1)
	}
	fmt.Println(l.Addr())
	if err := tcftest.CannedStackServer().Serve(l); err != nil {
		fmt.Fprintln(os.Stderr, "tcfbench: canned agent:", err)
		os.Exit(1)
	}
}

// startCanned starts the canned agent and returns its address and a
// function that stops it.
func startCanned() (addr string, stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), cannedEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	lifeline, err := cmd.StdinPipe() // see serveCanned
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() {
		lifeline.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("canned agent: no address: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}

// floor measures the warm stack round against the canned agent.
func (b *bench) floor() error {
	const key = "stack57.floor"
	addr, stop, err := startCanned()
	if err != nil {
		return err
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := dial(ctx, addr, nil, b.spin)
	if err != nil {
		return fmt.Errorf("connecting to the canned agent: %w", err)
	}
	defer s.c.Close()
	b.s = s
	st, err := b.stackRound(tcftest.CannedThread, true, nil)
	if err != nil {
		return err
	}
	if len(st.names) != 57 {
		return fmt.Errorf("canned agent: %s", st)
	}
	var waves waveTimes
	ss, err := b.repeat(func(smp *sample) error {
		return b.timeIt(smp, 5, func() error {
			for range 5 {
				if _, err := b.stackRound(tcftest.CannedThread, false, &waves); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	b.out.figure(figure{key: key, label: "57-frame stack round, zero-work agent", unit: "ms", vals: perOp(ss, time.Millisecond), client: clientPerOp(ss), note: "the floor under any agent's warm round with this client; " + waves.String()})
	return nil
}
