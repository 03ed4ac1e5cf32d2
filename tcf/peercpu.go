package tcf

import (
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A polling reader and a polling peer on the same CPU.
//
// Both ends of a loopback connection may poll their sockets (an agent's
// channel reader, a client with client.Options.ReadSpin): each then stays
// runnable while it waits, and when the kernel happens to put the two on one
// CPU they take turns there while another CPU idles. Every hand-over then
// waits for the other's sched_yield to take effect (20-25 µs on a 2-vCPU VM
// instead of a microsecond or two), and the load balancer leaves them so for
// many milliseconds, because both ran too recently to be worth moving
// ("cache-hot"): traced, a warm 57-frame stack round took 0.78-0.85 ms
// while they shared CPU 0 and 0.40-0.48 ms once the balancer had moved one
// of them, 12 ms later.
//
// The reader notices it: a sched_yield that took long means something else
// ran on its CPU meanwhile, and if the peer's next message arrived during
// it, the socket says on which CPU the peer wrote it (SO_INCOMING_CPU: on
// loopback the kernel processes a segment on the sending CPU). When that is
// the reader's own CPU, the reader moves to another one (leaveCPU).

// sharedYield is how long a sched_yield must take to say another thread ran
// on this CPU meanwhile: with nothing else to run it returns in about a
// microsecond, a turn of another thread takes several.
const sharedYield = 5 * time.Microsecond

// moveEvery bounds how often a reader moves itself: if the kernel keeps
// putting it back next to its peer (the other CPUs busy), moving would only
// add migrations.
const moveEvery = 2 * time.Millisecond

// peerOnMyCPU reports whether the peer's last segment on fd was sent from
// the CPU this thread runs on.
func peerOnMyCPU(fd uintptr) bool {
	peer, ok := incomingCPU(fd)
	if !ok {
		return false
	}
	mine, ok := currentCPU()
	return ok && mine == peer
}

// incomingCPU is fd's SO_INCOMING_CPU: the CPU that processed the last
// segment received (none before the first one).
func incomingCPU(fd uintptr) (int, bool) {
	var v int32 = -1
	l := uint32(unsafe.Sizeof(v))
	_, _, errno := syscall.RawSyscall6(syscall.SYS_GETSOCKOPT, fd, syscall.SOL_SOCKET, unix.SO_INCOMING_CPU,
		uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&l)), 0)
	return int(v), errno == 0 && v >= 0
}

// currentCPU is the CPU the calling thread runs on (it may move at any time
// after).
func currentCPU() (int, bool) {
	var cpu uint32
	_, _, errno := syscall.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0)
	return int(cpu), errno == 0
}

// leaveCPU moves the calling thread off CPU cpu, to another one it may run
// on, and leaves it free to run anywhere again: it excludes cpu from the
// thread's affinity — Linux migrates a running thread at once when its CPU
// is no longer allowed — and then restores the affinity it had. It returns
// the CPU the thread was moved to, and false when it could not move (cpu is
// the only one it may use).
func leaveCPU(cpu int) (to int, moved bool) {
	// The calls must act on one thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var had unix.CPUSet
	if unix.SchedGetaffinity(0, &had) != nil || !had.IsSet(cpu) {
		return cpu, false
	}
	others := had
	others.Clear(cpu)
	if others.Count() == 0 || unix.SchedSetaffinity(0, &others) != nil {
		return cpu, false
	}
	to, _ = currentCPU()
	// Restoring cannot fail where setting just succeeded; if it did, the
	// thread would only be kept off one CPU, which is harmless.
	_ = unix.SchedSetaffinity(0, &had)
	return to, true
}
