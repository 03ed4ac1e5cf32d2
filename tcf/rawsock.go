package tcf

import (
	"io"
	"net"
	"os"
	"runtime"
	"runtime/metrics"
	"syscall"
	"time"
	"unsafe"
)

// RawSocket reads and writes a connection's socket with raw system calls,
// waiting for readiness through the runtime's poller as net.Conn does.
//
// Why not net.Conn's own Read and Write: they tell the Go scheduler about
// every system call, and entering one while the runtime's monitor thread
// (sysmon) sleeps wakes it and makes it poll every 20 µs for the next
// millisecond or so. A TCF channel in a request/reply ping-pong enters a
// few system calls every few tens of microseconds, so the monitor never
// sleeps: it was the largest single user of the agent's CPU in an echo
// round-trip benchmark (bench/tcf/BENCHMARKS.md). The socket is non-blocking,
// so no call here ever blocks in the kernel and the bookkeeping buys nothing.
//
// Deadlines and Close of the underlying connection work as for net.Conn.
// Read may run concurrently with Write or TryWrite, but each of them only
// on one goroutine at a time (their state lives here, so that they do not
// allocate).
type RawSocket struct {
	rc syscall.RawConn
	// Spin is how long Read keeps polling the socket once it is empty before
	// it waits on the poller, when SpinOnce asked for it: data that arrives
	// meanwhile is taken without a sleeping thread being woken. Between polls
	// it lets other goroutines and other threads of the machine run.
	Spin     time.Duration
	spinNext bool
	// BeforeWait, if set, runs when a Read finds the socket empty, before
	// it spins or waits: the last moment to send what the reader owes the
	// peer (replies it held while more input was buffered), as the peer may
	// be waiting for them before it sends the rest.
	BeforeWait func()
	// AvoidPeer makes a spinning reader move to another CPU when it finds
	// it shares its own with the peer, polling too (see peercpu.go). One
	// end of a connection should do it, not both: they could swap CPUs.
	AvoidPeer bool
	moved     time.Time // when the reader last moved for it
	moves     int       // how often (for tests)
	movedTo   int       // and to which CPU last

	rbuf   []byte
	rn     uintptr
	rerr   syscall.Errno
	readFn func(fd uintptr) bool
	// looked is when the spinning reader last looked for goroutines
	// waiting for a P.
	looked   time.Time
	runnable [1]metrics.Sample
	wbuf     []byte
	wdone    int
	werr     syscall.Errno
	writeFn  func(fd uintptr) bool
	tryFn    func(fd uintptr) bool
}

// NewRawSocket returns a RawSocket over conn's socket, or nil when conn has
// none (a net.Pipe in tests): callers then use conn itself.
func NewRawSocket(conn net.Conn) *RawSocket {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	s := &RawSocket{rc: rc}
	s.runnable[0].Name = "/sched/goroutines/runnable:goroutines"
	s.readFn, s.writeFn, s.tryFn = s.read, s.write, s.tryWrite
	return s
}

// SpinOnce makes the next Read spin (see Spin) if it finds the socket empty.
// A reader asks for it where it waits for a new message, not for the rest
// of one: a peer that writes a message in pieces (the Eclipse TCF Python
// client sends each byte by itself) would otherwise be read a byte per
// system call while the reader spins between them.
func (s *RawSocket) SpinOnce() { s.spinNext = true }

// Read reads what the socket has, waiting until it has something (spinning
// first after SpinOnce).
func (s *RawSocket) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.rbuf = p
	err := s.rc.Read(s.readFn)
	s.rbuf, s.spinNext = nil, false
	switch {
	case err != nil:
		return 0, err
	case s.rerr != 0:
		return 0, os.NewSyscallError("read", s.rerr)
	case s.rn == 0:
		return 0, io.EOF
	}
	return int(s.rn), nil
}

// read is Read's callback: false means "wait until readable".
func (s *RawSocket) read(fd uintptr) bool {
	s.rn, s.rerr = rawIO(syscall.SYS_READ, fd, s.rbuf)
	if s.rerr == syscall.EAGAIN && s.BeforeWait != nil {
		s.BeforeWait()
		s.rn, s.rerr = rawIO(syscall.SYS_READ, fd, s.rbuf)
	}
	if s.rerr != syscall.EAGAIN || s.Spin <= 0 || !s.spinNext {
		return s.rerr != syscall.EAGAIN
	}
	s.spinNext = false // once per SpinOnce, also when the poller calls again
	now := time.Now()
	deadline := now.Add(s.Spin)
	for s.rerr == syscall.EAGAIN && now.Before(deadline) {
		// Threads of other processes may need this CPU (the client, the
		// program): yield it to them at every poll. This process's
		// goroutines get this P only when some are waiting for one (looked
		// at every schedEvery): with the tracer thread spinning on the
		// other P, they would wait for the reader to stop spinning — which
		// it never does while commands keep coming, until the runtime
		// preempts it by signal (a 250 µs spin halved breakpoint hits).
		// runtime.Gosched at every poll (before) woke an idle thread to
		// look for work each time: a futex wake-up, two thread switches and
		// a turn on the other CPU per poll, 3-4 polls per 100 µs instead of
		// ~30 (perf trace of a stack round on a 2-vCPU VM). Even once per
		// millisecond it cost echo round trips a third (likely because the
		// reader then resumes on another thread, often on the CPU the
		// client does not use, and every message wakes a halted CPU).
		if now.Sub(s.looked) >= schedEvery {
			s.looked = now
			if othersWaiting(s.runnable[:]) {
				gosched()
			}
		}
		syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
		yielded := now
		if s.AvoidPeer {
			yielded = time.Now()
		}
		if readable(fd) {
			s.rn, s.rerr = rawIO(syscall.SYS_READ, fd, s.rbuf)
			if s.AvoidPeer && yielded.Sub(now) > sharedYield && s.rerr != syscall.EAGAIN {
				s.avoidPeer(fd, yielded)
			}
		}
		now = time.Now()
	}
	return s.rerr != syscall.EAGAIN
}

// avoidPeer moves the reader to another CPU if the peer, whose message came
// while another thread had the reader's CPU, sent it from this CPU.
func (s *RawSocket) avoidPeer(fd uintptr, now time.Time) {
	if now.Sub(s.moved) < moveEvery || !peerOnMyCPU(fd) {
		return
	}
	cpu, ok := currentCPU()
	if !ok {
		return
	}
	if to, moved := leaveCPU(cpu); moved {
		s.moved, s.movedTo = now, to
		s.moves++
	}
}

// readable reports whether fd has input, an error or a hang-up waiting. The
// spin asks this between reads because Linux answers it without the
// socket's lock, which every read takes: a reader polling with reads made
// whoever wrote to the same socket meanwhile sleep for the lock (traced: the
// tracer thread writing a stop's event went to sleep, and the reader's
// non-blocking read sat 67 µs in the kernel, waiting for the lock and then
// for a CPU).
func readable(fd uintptr) bool {
	pfd := pollFd{fd: int32(fd), events: pollIn}
	var zero syscall.Timespec // do not wait
	n, _, errno := syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1,
		uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
	// An error of ppoll itself: let the read find out what is wrong.
	return errno != 0 || (n == 1 && pfd.revents != 0)
}

// pollFd is struct pollfd; pollIn is POLLIN (POLLERR and POLLHUP are
// always reported).
type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

const pollIn = 0x1

// Write writes all of p, waiting for room in the socket as needed.
func (s *RawSocket) Write(p []byte) (int, error) {
	s.wbuf, s.wdone, s.werr = p, 0, 0
	err := s.rc.Write(s.writeFn)
	s.wbuf = nil
	switch {
	case err != nil:
		return s.wdone, err
	case s.werr != 0:
		return s.wdone, os.NewSyscallError("write", s.werr)
	}
	return s.wdone, nil
}

// write is Write's callback: false means "wait until writable".
func (s *RawSocket) write(fd uintptr) bool {
	for s.wdone < len(s.wbuf) {
		var n uintptr
		n, s.werr = rawIO(syscall.SYS_WRITE, fd, s.wbuf[s.wdone:])
		if s.werr == syscall.EAGAIN {
			s.werr = 0
			return false
		}
		if s.werr != 0 {
			return true
		}
		s.wdone += int(n)
	}
	return true
}

// TryWrite writes what the socket takes now, without waiting: the number of
// bytes written, and whether the socket is still usable (an error other than
// a full socket is left for a later Write to meet).
func (s *RawSocket) TryWrite(p []byte) (int, bool) {
	s.wbuf, s.wdone, s.werr = p, 0, 0
	_ = s.rc.Write(s.tryFn)
	s.wbuf = nil
	return s.wdone, s.werr == 0 || s.werr == syscall.EAGAIN
}

// tryWrite is TryWrite's callback: it never asks to wait.
func (s *RawSocket) tryWrite(fd uintptr) bool {
	for s.wdone < len(s.wbuf) {
		var n uintptr
		n, s.werr = rawIO(syscall.SYS_WRITE, fd, s.wbuf[s.wdone:])
		if s.werr != 0 {
			break
		}
		s.wdone += int(n)
	}
	return true
}

// schedEvery is how often a spinning reader looks for goroutines waiting
// for a P (a look takes the scheduler's lock for a moment).
const schedEvery = 50 * time.Microsecond

// othersWaiting and gosched are runnableGoroutines and runtime.Gosched
// (a test counts the calls).
var (
	othersWaiting = runnableGoroutines
	gosched       = runtime.Gosched
)

// runnableGoroutines reports whether goroutines of this process wait for a
// P, with smp[0] naming the runtime's metric of them.
func runnableGoroutines(smp []metrics.Sample) bool {
	metrics.Read(smp)
	return smp[0].Value.Kind() == metrics.KindUint64 && smp[0].Value.Uint64() > 0
}

// rawIO is one read or write of p on fd, retried on EINTR. It returns EAGAIN
// rather than blocking (the socket is non-blocking).
func rawIO(trap, fd uintptr, p []byte) (uintptr, syscall.Errno) {
	for {
		n, _, errno := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if errno != syscall.EINTR {
			return n, errno
		}
	}
}
