package profiling

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sondedbg/sonde/perfdata"
	"github.com/sondedbg/sonde/unwind/snapshot"
)

// Sampler samples a process by itself through perf_event_open: a CPU-clock
// event per CPU for each thread (inherited by the threads and children they
// create), user registers and a copy of the user stack in every sample, read
// from one ring buffer per CPU as it fills. Its records are the ones `perf
// record` would write, so a Builder turns them into stacks the same way.
type Sampler struct {
	attr  unix.PerfEventAttr
	pattr *perfdata.Attr
	dec   *perfdata.Reader
	fds   []int
	rings []*ring
	batch []pending
	arena []byte
}

// ring is one CPU's mmapped ring buffer.
type ring struct {
	fd   int
	mem  []byte // header page, then the data pages
	data []byte
}

type pending struct {
	time uint64
	seq  int
	rec  []byte
}

// SamplerOptions configure a Sampler.
type SamplerOptions struct {
	Frequency     int  // samples per second per thread (default 999: not in step with timer ticks)
	FramePointers bool // callchains from frame pointers instead of stack copies
	// StackBytes is how much of the user stack each sample copies
	// (default DefaultStackBytes, perf record's; a multiple of 8 up to
	// MaxStackBytes). Walks deeper than the copy stop at its end, marked
	// StopStackCopy.
	StackBytes uint32
	// EnableOnExec starts sampling when the process (stopped before its
	// exec) execs: how a launched program is profiled from its first
	// instruction.
	EnableOnExec bool
}

// DefaultStackBytes is the user stack a sample copies by default: perf
// record's --call-graph dwarf default. The kernel copies it in the sampling
// interrupt, on the sampled program's CPU and time.
const DefaultStackBytes = 8 << 10

// MaxStackBytes is the largest stack copy the kernel takes (a record is at
// most 64 KiB; perf's --call-graph dwarf,65528).
const MaxStackBytes = 65528

// ringBytes is the size of each CPU's ring buffer for samples copying
// stack bytes of stack: room for ~120 samples (~120 ms at 1 kHz on one
// thread; more than perf record's 512 KiB, so a reader descheduled on a
// loaded machine loses fewer), at least 1 MiB, at most 8 MiB; a power of
// two pages, as the kernel requires.
func ringBytes(stack uint32) int {
	page := os.Getpagesize()
	want := 120 * (int(stack) + 1024)
	n := 1 << 20
	for n < want && n < 8<<20 {
		n *= 2
	}
	return max(n, page)
}

// NewSampler opens the events for the threads tids (of one process) on every
// online CPU. With EnableOnExec, tids is the one thread that will exec.
func NewSampler(tids []int, opts SamplerOptions) (*Sampler, error) {
	if opts.Frequency <= 0 {
		opts.Frequency = 999
	}
	if opts.StackBytes == 0 {
		opts.StackBytes = DefaultStackBytes
	}
	if opts.StackBytes%8 != 0 || opts.StackBytes > MaxStackBytes {
		return nil, fmt.Errorf("a stack copy of %d bytes: the kernel takes a multiple of 8 up to %d", opts.StackBytes, MaxStackBytes)
	}
	s := &Sampler{}
	a := &s.attr
	a.Type = unix.PERF_TYPE_SOFTWARE
	a.Config = unix.PERF_COUNT_SW_CPU_CLOCK
	a.Size = uint32(unsafe.Sizeof(*a))
	a.Sample = uint64(opts.Frequency)
	a.Sample_type = perfdata.SampleIP | perfdata.SampleTID | perfdata.SampleTime | perfdata.SampleCPU | perfdata.SamplePeriod | perfdata.SampleCallchain
	a.Bits = unix.PerfBitDisabled | unix.PerfBitInherit | unix.PerfBitMmap | unix.PerfBitComm | unix.PerfBitFreq |
		unix.PerfBitTask | unix.PerfBitSampleIDAll | unix.PerfBitMmap2 | unix.PerfBitCommExec | unix.PerfBitExcludeHv
	if opts.EnableOnExec {
		a.Bits |= unix.PerfBitEnableOnExec
	}
	if !opts.FramePointers {
		a.Sample_type |= perfdata.SampleRegsUser | perfdata.SampleStackUser
		a.Sample_regs_user = 0xff0fff // every general register, flags, cs, ss (perf's --call-graph dwarf)
		a.Sample_stack_user = opts.StackBytes
		a.Bits |= unix.PerfBitExcludeCallchainUser
	}
	// Wake the reader when an eighth of the ring has filled, not at every
	// sample as wakeup_events=1 would: each wakeup is an irq_work and a
	// scheduler wakeup on the sampled program's CPU (perf record wakes at
	// half its ring). The reader's 50 ms poll timeout drains the rest.
	a.Bits |= unix.PerfBitWatermark
	ring := ringBytes(opts.StackBytes)
	a.Wakeup = uint32(ring / 8)
	s.pattr = &perfdata.Attr{Type: a.Type, Config: a.Config, SampleType: a.Sample_type, Flags: a.Bits,
		SampleRegsUser: a.Sample_regs_user, SampleStackUser: a.Sample_stack_user}
	s.dec = perfdata.NewRecordReader(s.pattr)
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, err
	}
	for _, cpu := range cpus {
		leader := -1
		for _, tid := range tids {
			fd, err := unix.PerfEventOpen(a, tid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
			if err != nil {
				s.Close()
				if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
					return nil, fmt.Errorf("perf_event_open: %w (kernel.perf_event_paranoid is %s: run as root, or lower it to 1 or less, or give sonde CAP_PERFMON)", err, paranoid())
				}
				if errors.Is(err, unix.ESRCH) {
					continue // the thread ended meanwhile
				}
				return nil, fmt.Errorf("perf_event_open (thread %d, CPU %d): %w", tid, cpu, err)
			}
			s.fds = append(s.fds, fd)
			if leader < 0 {
				leader = fd
				r, err := mapRing(fd, ring)
				if err != nil {
					s.Close()
					return nil, err
				}
				s.rings = append(s.rings, r)
				continue
			}
			if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, leader); err != nil {
				s.Close()
				return nil, fmt.Errorf("perf_event_open: sharing CPU %d's buffer: %w", cpu, err)
			}
		}
	}
	if len(s.rings) == 0 {
		s.Close()
		return nil, fmt.Errorf("perf_event_open: no thread to sample (the process ended?)")
	}
	return s, nil
}

func paranoid() string {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	var cpus []int
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, found := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		z := a
		var err2 error
		if found {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || z < a || z-a > 4096 {
			return nil, fmt.Errorf("/sys/devices/system/cpu/online: %q", b)
		}
		for c := a; c <= z; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

func mapRing(fd int, size int) (*ring, error) {
	page := os.Getpagesize()
	mem, err := unix.Mmap(fd, 0, page+size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap of a perf ring buffer: %w (a locked-memory limit? see kernel.perf_event_mlock_kb)", err)
	}
	return &ring{fd: fd, mem: mem, data: mem[page:]}, nil
}

// Enable starts sampling (not needed with EnableOnExec).
func (s *Sampler) Enable() error {
	for _, fd := range s.fds {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			return err
		}
	}
	return nil
}

// Disable stops sampling; what is buffered can still be read.
func (s *Sampler) Disable() {
	for _, fd := range s.fds {
		unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0)
	}
}

// Wait blocks until a ring buffer has data or timeoutMs passes.
func (s *Sampler) Wait(timeoutMs int) {
	fds := make([]unix.PollFd, len(s.rings))
	for i, r := range s.rings {
		fds[i] = unix.PollFd{Fd: int32(r.fd), Events: unix.POLLIN}
	}
	unix.Poll(fds, timeoutMs)
}

// Synthesize feeds the Builder what a process that already runs has mapped
// (from /proc/PID/maps) and its name, as perf synthesizes MMAP2 and COMM
// records when it attaches.
func (s *Sampler) Synthesize(b *Builder, pid int) error {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return err
	}
	b.Add(&perfdata.Record{Type: perfdata.RecordComm, Comm: perfdata.Comm{PID: uint32(pid), TID: uint32(pid), Name: strings.TrimSpace(string(comm))}})
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return err
	}
	defer f.Close()
	maps, err := snapshot.ReadMaps(f)
	if err != nil {
		return err
	}
	for _, m := range maps {
		rec := perfdata.Mmap{PID: uint32(pid), TID: uint32(pid), Addr: m.Start, Len: m.End - m.Start, PgOff: m.Offset, Filename: m.Name, Exec: m.Exec}
		if m.Exec {
			rec.Prot |= unix.PROT_EXEC
		}
		b.Add(&perfdata.Record{Type: perfdata.RecordMmap2, Mmap: rec})
	}
	return nil
}

// Drain reads everything the ring buffers hold, in time order, into the
// Builder, calling fn with each sample's stack.
func (s *Sampler) Drain(b *Builder, fn func(*Sample) error) error {
	s.batch, s.arena = s.batch[:0], s.arena[:0]
	seq := 0
	for _, r := range s.rings {
		for _, rec := range r.take(&s.arena) {
			s.batch = append(s.batch, pending{seq: seq, rec: rec})
			seq++
		}
	}
	// Record times, for the order perf's tools process records in.
	for i := range s.batch {
		rec, err := s.dec.Decode(s.batch[i].rec, 0)
		if err != nil {
			continue
		}
		s.batch[i].time = recordTimeOf(rec)
	}
	slices.SortStableFunc(s.batch, func(a, b pending) int {
		switch {
		case a.time < b.time:
			return -1
		case a.time > b.time:
			return 1
		}
		return a.seq - b.seq
	})
	for _, p := range s.batch {
		rec, err := s.dec.Decode(p.rec, 0)
		if err != nil {
			continue // a record the kernel wrote that this reader does not understand
		}
		if smp := b.Add(rec); smp != nil {
			if err := fn(smp); err != nil {
				return err
			}
		}
	}
	return nil
}

func recordTimeOf(rec *perfdata.Record) uint64 {
	switch rec.Type {
	case perfdata.RecordSample:
		return rec.Sample.Time
	case perfdata.RecordFork, perfdata.RecordExit:
		return rec.Task.Time
	}
	return rec.ID.Time
}

// take copies out the records between the tail and the head of the ring
// (records may wrap around its end) and frees that space.
func (r *ring) take(arena *[]byte) [][]byte {
	head := atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.mem[1024])))
	tailp := (*uint64)(unsafe.Pointer(&r.mem[1032]))
	tail := atomic.LoadUint64(tailp)
	size := uint64(len(r.data))
	var out [][]byte
	for tail+8 <= head {
		var hdr [8]byte
		for i := range hdr {
			hdr[i] = r.data[(tail+uint64(i))%size]
		}
		n := uint64(hdr[6]) | uint64(hdr[7])<<8
		if n < 8 || tail+n > head {
			break
		}
		start := len(*arena)
		for i := uint64(0); i < n; {
			at := (tail + i) % size
			chunk := min(n-i, size-at)
			*arena = append(*arena, r.data[at:at+chunk]...)
			i += chunk
		}
		out = append(out, (*arena)[start:len(*arena):len(*arena)])
		tail += n
	}
	atomic.StoreUint64(tailp, tail)
	return out
}

// Close stops sampling and releases the events and their buffers.
func (s *Sampler) Close() {
	for _, r := range s.rings {
		unix.Munmap(r.mem)
	}
	for _, fd := range s.fds {
		unix.Close(fd)
	}
	s.rings, s.fds = nil, nil
	runtime.KeepAlive(s)
}
