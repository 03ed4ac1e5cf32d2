package tcf

import (
	"net"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// TestSpinYieldsItsP: a reader spinning on an empty socket looks for
// goroutines waiting for a P once per schedEvery — not at every poll, not
// never — and hands them its P only when there are some.
func TestSpinYieldsItsP(t *testing.T) {
	for _, waiting := range []bool{false, true} {
		looks, calls := 0, 0
		othersWaiting = func([]metrics.Sample) bool { looks++; return waiting }
		gosched = func() { calls++ }
		spun := spinOnEmptySocket(t, 50*time.Millisecond)
		othersWaiting, gosched = runnableGoroutines, runtime.Gosched
		most := int(spun/schedEvery) + 1
		if looks == 0 || looks > most {
			t.Errorf("waiting %v: %d looks in a spin of %v (one per %v: at most %d)", waiting, looks, spun, schedEvery, most)
		}
		if want := map[bool]int{false: 0, true: looks}[waiting]; calls != want {
			t.Errorf("waiting %v: %d calls of Gosched for %d looks, want %d", waiting, calls, looks, want)
		}
	}
}

// spinOnEmptySocket spins a reader for d on a socket nobody writes to and
// returns how long the spin took.
func spinOnEmptySocket(t *testing.T, d time.Duration) time.Duration {
	conn, _ := loopbackPair(t)
	rs := NewRawSocket(conn)
	rs.Spin = d
	// After the spin the reader waits in the poller until the deadline.
	rs.SpinOnce()
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(d + 100*time.Millisecond))
	_, _ = rs.Read(make([]byte, 1))
	spun := time.Since(start)
	if spun < d {
		t.Fatalf("the read did not spin: it returned after %v", spun)
	}
	return min(spun, d)
}

// TestRunnableGoroutines: the look the spin makes sees a goroutine that
// waits for a P, and no longer once it ran.
func TestRunnableGoroutines(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	smp := make([]metrics.Sample, 1)
	smp[0].Name = "/sched/goroutines/runnable:goroutines"
	for try := 0; try < 100; try++ {
		ran := make(chan struct{})
		go close(ran) // waits: this goroutine holds the only P...
		seen := runnableGoroutines(smp)
		select {
		case <-ran:
			// ...unless this one was descheduled first (a GC, a
			// preemption under load): the look proves nothing then.
			continue
		default:
		}
		if !seen {
			t.Fatal("a goroutine waiting for the only P is not seen")
		}
		runtime.Gosched()
		<-ran
		// Other goroutines of the test binary (earlier tests' connections
		// closing, timers) may wait for the P too: let them run as well.
		for i := 0; i < 100 && runnableGoroutines(smp); i++ {
			runtime.Gosched()
		}
		if runnableGoroutines(smp) {
			t.Fatal("goroutines are seen waiting after they all had the P")
		}
		return
	}
	t.Fatal("the goroutine always ran before the look")
}

// TestReadable: the spin's lock-free look at the socket sees input, and a
// closed peer, and nothing on an empty socket.
func TestReadable(t *testing.T) {
	conn, peer := loopbackPair(t)
	rc, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	look := func() (r bool) {
		if err := rc.Control(func(fd uintptr) { r = readable(fd) }); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if look() {
		t.Fatal("an empty socket is readable")
	}
	if _, err := peer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, look, "a byte the peer wrote")
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if look() {
		t.Fatal("readable after its only byte was read")
	}
	peer.Close()
	waitFor(t, look, "the peer's close")
}

// waitFor polls cond for up to 5 s (loopback delivery is not synchronous
// with the peer's write).
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("not readable after %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// loopbackPair returns both ends of a TCP connection on loopback, closed
// when the test ends.
func loopbackPair(t *testing.T) (conn, peer net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conn, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	peer, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	return conn, peer
}
