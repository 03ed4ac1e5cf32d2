package tcf

import (
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// twoCPUs returns two CPUs this process may run on, or skips the test.
func twoCPUs(t *testing.T) (a, b int) {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Skipf("sched_getaffinity: %v", err)
	}
	var cpus []int
	for i := 0; i < len(set)*64 && len(cpus) < 2; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) < 2 {
		t.Skip("this process may run on one CPU only: nothing to move to")
	}
	return cpus[0], cpus[1]
}

// pinTo moves the calling (locked) thread to cpu and, with keep false,
// lets it run anywhere again afterwards (it stays on cpu until moved).
func pinTo(t *testing.T, cpu int, keep bool) {
	t.Helper()
	if err := moveTo(cpu, keep); err != nil {
		t.Fatal(err)
	}
}

func moveTo(cpu int, keep bool) error {
	var had, only unix.CPUSet
	if err := unix.SchedGetaffinity(0, &had); err != nil {
		return err
	}
	only.Set(cpu)
	if err := unix.SchedSetaffinity(0, &only); err != nil {
		return err
	}
	if !keep {
		return unix.SchedSetaffinity(0, &had)
	}
	return nil
}

func unpin(t *testing.T, set *unix.CPUSet) {
	t.Helper()
	if err := unix.SchedSetaffinity(0, set); err != nil {
		t.Fatal(err)
	}
}

func sockFD(t *testing.T, c net.Conn) uintptr {
	t.Helper()
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd uintptr
	if err := rc.Control(func(f uintptr) { fd = f }); err != nil {
		t.Fatal(err)
	}
	return fd
}

// TestPeerOnMyCPU: on loopback, the receiving socket tells the CPU the
// peer wrote from, and peerOnMyCPU compares it with the caller's.
func TestPeerOnMyCPU(t *testing.T) {
	a, b := twoCPUs(t)
	conn, peer := loopbackPair(t)
	fd := sockFD(t, peer)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	defer unpin(t, &all)
	for _, from := range []int{a, b} {
		pinTo(t, from, true)
		if _, err := conn.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if got, ok := incomingCPU(fd); !ok || got != from {
			t.Fatalf("written on CPU %d: SO_INCOMING_CPU %d (%v)", from, got, ok)
		}
		if !peerOnMyCPU(fd) {
			t.Errorf("written on CPU %d and asked there: not seen as the same CPU", from)
		}
		other := map[int]int{a: b, b: a}[from]
		pinTo(t, other, true)
		if peerOnMyCPU(fd) {
			t.Errorf("written on CPU %d, asked on %d: seen as the same CPU", from, other)
		}
	}
}

// TestLeaveCPU: the thread ends on another CPU with the affinity it had.
func TestLeaveCPU(t *testing.T) {
	a, _ := twoCPUs(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var had unix.CPUSet
	if err := unix.SchedGetaffinity(0, &had); err != nil {
		t.Fatal(err)
	}
	pinTo(t, a, false)
	to, moved := leaveCPU(a)
	if !moved {
		t.Fatalf("did not leave CPU %d", a)
	}
	if to == a {
		t.Errorf("moved, but to CPU %d where it was", a)
	}
	var now unix.CPUSet
	if err := unix.SchedGetaffinity(0, &now); err != nil {
		t.Fatal(err)
	}
	if now != had {
		t.Errorf("affinity %v after the move, want %v as before", now, had)
	}
	// The only CPU allowed: nowhere to go.
	defer unpin(t, &had)
	pinTo(t, a, true)
	if _, moved := leaveCPU(a); moved {
		t.Errorf("left the only CPU it may use")
	}
}

// TestSpinLeavesPollingPeer: a spinning reader with AvoidPeer, put on the
// CPU where its peer polls too, moves away once the peer's message comes
// during one of its yields.
func TestSpinLeavesPollingPeer(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS >= 2: reader and peer each hold a P while they poll")
	}
	a, _ := twoCPUs(t)
	conn, peer := loopbackPair(t)
	// The peer: pinned to CPU a, polling for each reply before it sends
	// the next message.
	stop := make(chan struct{})
	defer close(stop)
	peerErr := make(chan error, 1)
	go func() {
		// Locked to the end: its thread, pinned, ends with the goroutine
		// instead of going back to the runtime's pool.
		runtime.LockOSThread()
		if err := moveTo(a, true); err != nil {
			peerErr <- err
			return
		}
		rs := NewRawSocket(conn)
		rs.Spin = time.Second
		buf := make([]byte, 64)
		for {
			select {
			case <-stop:
				peerErr <- nil
				return
			default:
			}
			if _, err := rs.Write([]byte("ping")); err != nil {
				peerErr <- err
				return
			}
			rs.SpinOnce()
			if _, err := rs.Read(buf); err != nil {
				peerErr <- err
				return
			}
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rs := NewRawSocket(peer)
	rs.Spin = time.Second
	rs.AvoidPeer = true
	buf := make([]byte, 64)
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; rs.moves == 0 && time.Now().Before(deadline); i++ {
		if i%20 == 0 {
			pinTo(t, a, false) // (back) next to the peer
		}
		rs.SpinOnce()
		if _, err := rs.Read(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := rs.Write([]byte("pong")); err != nil {
			t.Fatal(err)
		}
	}
	if rs.moves == 0 {
		t.Fatalf("the reader never left CPU %d, where its peer polls", a)
	}
	if rs.movedTo == a {
		t.Errorf("moved, but to CPU %d where its peer is", a)
	}
	peer.Close()
	<-peerErr // the peer's read fails now: only its end matters
}
