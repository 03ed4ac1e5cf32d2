package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sondedbg/sonde/tcf/client"
)

// rssOf is a process's resident set in bytes (VmRSS of /proc/PID/status).
func rssOf(t *testing.T, pid int) int64 {
	t.Helper()
	r, err := readRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func readRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS %q", v)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status (process exited?)", pid)
}

// rssWatch samples a process's RSS until stopped, keeping the peak.
type rssWatch struct {
	peak atomic.Int64
	once *sync.Once
	stop chan struct{}
	done chan struct{}
}

func watchRSS(t *testing.T, pid int) *rssWatch {
	w := &rssWatch{stop: make(chan struct{}), done: make(chan struct{})}
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(w.stop) }) }) // a test that failed half-way
	w.once = &once
	go func() {
		defer close(w.done)
		for {
			if r, err := readRSS(pid); err == nil && r > w.peak.Load() {
				w.peak.Store(r)
			}
			select {
			case <-w.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *rssWatch) end() int64 {
	w.once.Do(func() { close(w.stop) })
	<-w.done
	return w.peak.Load()
}

const helloMsg = "E\x00Locator\x00Hello\x00[]\x00\x03\x01"

// zeroCopyHeader is the attack of issue 20: a command whose argument is
// a ZeroCopy block announcing nearly the message limit (32 MiB), of
// which nothing follows.
func zeroCopyHeader() []byte {
	b := []byte("C\x001\x00Diagnostics\x00echo\x00")
	b = append(b, 0x03, 0x03)
	n := uint64(32<<20 - 4096)
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

const mib = 1 << 20

// TestAgentMemoryUnderAttack: announced ZeroCopy blocks on 300
// connections, slow readers that never read their replies, and 1 GiB of
// garbage keep a real agent under 300 MB of RSS, the agent keeps serving,
// and it gives the memory back afterwards.
func TestAgentMemoryUnderAttack(t *testing.T) {
	a := startAgent(t, 1, "--listen", "TCP:127.0.0.1:0", "--max-channels-per-peer", "256")
	addr := strings.TrimPrefix(a.addrs[0], "TCP:")
	pid := a.cmd.Process.Pid
	if err := echo(t, addr, client.Options{}); err != nil {
		t.Fatal(err)
	}
	base := rssOf(t, pid)
	const limit = 300 * mib

	// 1. 300 connections, each a Hello and a 32 MiB announcement.
	w := watchRSS(t, pid)
	var conns []net.Conn
	hdr := append([]byte(helloMsg), zeroCopyHeader()...)
	for range 300 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		c.Write(hdr)
	}
	// Let the agent admit every connection (256 channels, 44 refused)
	// and read every header. (A fresh client of another user is served
	// meanwhile: TestAgentHelloTimeoutAndPerPeerLimit.)
	// (Under load some may be refused while being admitted instead.)
	a.waitCount(t, "msg=\"refusing ", 300-256)
	time.Sleep(time.Second)
	zc := w.end()
	refused := strings.Count(a.log.String(), "msg=\"refusing ")
	for _, c := range conns {
		c.Close()
	}
	t.Logf("ZeroCopy attack: 300 connections (%d channels held, %d refused), RSS %d MiB -> peak %d MiB",
		300-refused, refused, base/mib, zc/mib)
	if zc > limit {
		t.Errorf("RSS under the ZeroCopy attack: %d MiB", zc/mib)
	}

	// 2. Slow readers: echo commands of 256 KiB each, replies never read.
	// The agent stops reading a channel whose replies do not drain (its
	// reader writes them), so a client's write stalls: give up then.
	w = watchRSS(t, pid)
	arg := `"` + strings.Repeat("x", 256<<10) + `"`
	cmd := []byte("C\x001\x00Diagnostics\x00echo\x00" + arg + "\x00\x03\x01")
	var wg sync.WaitGroup
	var slowSent atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer c.Close()
			c.Write([]byte(helloMsg))
			for sent := 0; sent < 512*mib; sent += len(cmd) {
				c.SetWriteDeadline(time.Now().Add(2 * time.Second))
				if _, err := c.Write(cmd); err != nil {
					return // the agent closed us, or stopped reading
				}
				slowSent.Add(int64(len(cmd)))
			}
		}()
	}
	wg.Wait()
	slow := w.end()
	t.Logf("slow readers: 8 connections sent %d MiB of commands, RSS peak %d MiB", slowSent.Load()/mib, slow/mib)
	if slow > limit {
		t.Errorf("RSS with slow readers: %d MiB", slow/mib)
	}

	// 3. 1 GiB of garbage (no escape byte: it all goes into message
	// bodies), four connections at a time, each reconnecting when closed.
	w = watchRSS(t, pid)
	junk := bytes.Repeat([]byte("A"), mib)
	var garbage atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for garbage.Load() < 1<<30 {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				c.Write([]byte(helloMsg))
				c.SetWriteDeadline(time.Now().Add(30 * time.Second))
				for garbage.Load() < 1<<30 {
					n, err := c.Write(junk)
					garbage.Add(int64(n))
					if err != nil {
						break
					}
				}
				c.Close()
			}
		}()
	}
	wg.Wait()
	junkPeak := w.end()
	t.Logf("garbage: %d MiB sent, RSS peak %d MiB", garbage.Load()/mib, junkPeak/mib)
	if junkPeak > limit {
		t.Errorf("RSS with garbage: %d MiB", junkPeak/mib)
	}
	if err := echo(t, addr, client.Options{}); err != nil {
		t.Errorf("client after the attacks: %v", err)
	}

	// Memory is given back (bounded wait: the agent returns it a moment
	// after the last large channel closed; on a loaded machine later).
	var after int64
	for deadline := time.Now().Add(60 * time.Second); ; {
		after = rssOf(t, pid)
		if after < 64*mib || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("after the attacks: RSS %d MiB (started at %d MiB)", after/mib, base/mib)
	if after >= 64*mib {
		t.Errorf("RSS stays at %d MiB after the attacks", after/mib)
	}
}
