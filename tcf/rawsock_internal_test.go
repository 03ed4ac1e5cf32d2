package tcf

import (
	"net"
	"runtime"
	"testing"
	"time"
)

// TestSpinYieldsItsP: a reader spinning on an empty socket hands its P to
// the process's other goroutines now and then (every schedEvery), not at
// every poll and not never: a goroutine readied on its P must not wait for
// the whole spin while the other Ps are busy (in the agent, the tracer
// thread spins on one).
func TestSpinYieldsItsP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			defer c.Close()
			time.Sleep(200 * time.Millisecond) // then the reader sees EOF
		}
	}()
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	calls, polls := 0, 0
	gosched = func() { calls++ }
	defer func() { gosched = runtime.Gosched }()
	rs := NewRawSocket(conn)
	rs.Spin = 50 * time.Millisecond
	rs.BeforeWait = func() { polls++ } // once per Read that finds the socket empty
	rs.SpinOnce()
	start := time.Now()
	_, _ = rs.Read(make([]byte, 1))
	spun := time.Since(start)
	if polls == 0 || spun < rs.Spin {
		t.Fatalf("the read did not spin (%v, %d empty reads)", spun, polls)
	}
	// At least one call, and at most one per schedEvery of the spin.
	if most := int(rs.Spin/schedEvery) + 1; calls == 0 || calls > most {
		t.Fatalf("%d calls of Gosched in a spin of %v (one per %v: at most %d)", calls, rs.Spin, schedEvery, most)
	}
}
