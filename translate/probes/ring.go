package probes

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Recording probes: at each hit where the condition holds (or at every hit)
// the payload writes values (registers, frame slots, globals: Value) into a
// ring buffer in the code cache, which sonde drains while the program runs,
// without stopping it. A hit costs nanoseconds instead of a trap.
//
// The ring holds RingCap records of 64 bytes: up to MaxRecordValues words
// and a commit word. A writer takes a ticket t with `lock xadd` on the
// ring's head, clears the commit word of slot t mod RingCap, writes the
// values, then sets the commit word to t+1 (x86 keeps stores in order).
// The drainer reads the head, then every slot, then the slots again: a
// record counts when its commit word is t+1 in both reads (a seqlock read
// with two reads: a writer that started overwriting the slot before the
// second read cleared it first). Writers never wait: when the drainer falls
// more than RingCap records behind, the oldest records are overwritten and
// counted as lost (Ring.Lost), never silently dropped.

const (
	// RingCap is the number of records a ring holds (a power of two).
	RingCap = 1024
	// MaxRecordValues is how many values one record holds.
	MaxRecordValues = 7
	recordSize      = 64
	ringHeader      = 64 // the head, alone on its cache line
	// drainEvery is how often the set's drainer reads its rings.
	drainEvery = 20 * time.Millisecond
)

// Ring is a recording probe's ring buffer.
type Ring struct {
	p      *Probe
	head   uint64 // address of the head (next ticket)
	slots  uint64 // address of slot 0
	nvals  int
	onRec  func(vals []uint64)
	onLost func(n uint64)

	mu   sync.Mutex
	next uint64 // the next ticket to deliver
	lost uint64
	recs uint64
}

// Ring returns a recording probe's ring buffer (nil for other probes).
func (p *Probe) Ring() *Ring { return p.ring }

// Lost returns the number of records overwritten before sonde read them.
func (r *Ring) Lost() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost
}

// Records returns the number of records delivered.
func (r *Ring) Records() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recs
}

// AddRecordIf adds a probe at addr (named loc) inside fn that, at each hit
// where x holds (x nil: every hit), records vals into a ring buffer; onRec
// gets each record's values in the order of the hits (on the set's drainer
// goroutine, or on the backend's thread for the last records of a process
// that exits), onLost the number of records lost when some were. An error
// means nothing was planted (an *UnsafeError when the site cannot take a
// jump): the caller falls back to a breakpoint of its own.
func (s *Set) AddRecordIf(loc string, addr uint64, fn *Function, x *Expr, vals []Value, onRec func(vals []uint64), onLost func(n uint64)) (*Probe, *Ring, error) {
	if x != nil {
		if err := x.Check(); err != nil {
			return nil, nil, err
		}
	}
	if len(vals) > MaxRecordValues {
		return nil, nil, fmt.Errorf("probe %s: %d values, a record holds %d", loc, len(vals), MaxRecordValues)
	}
	for _, v := range vals {
		if err := (&Expr{Cmp: &Compare{Value: v, Op: "=="}}).Check(); err != nil {
			return nil, nil, err
		}
	}
	if fn == nil {
		return nil, nil, &UnsafeError{Addr: addr, Reason: "no function symbol with a size contains the address, so the site cannot be checked"}
	}
	p := &Probe{Location: loc, Addr: addr, set: s, Kind: KindProbe}
	ring := &Ring{p: p, nvals: len(vals), onRec: onRec, onLost: onLost}
	shadowed := s.shadow(*fn)
	site, err := Analyze(shadowed, addr)
	if err != nil {
		return nil, nil, err
	}
	err = s.patchIn(p, shadowed, []Site{site}, 2*ringHeader+RingCap*recordSize, func(data uint64) map[uint64]hook {
		// The hit counter, then the ring (the head on a line of its own).
		p.counter = data
		ring.head = data + ringHeader
		ring.slots = data + 2*ringHeader
		return map[uint64]hook{site.Addr: func(e *emitter, app uint64) error {
			return e.recordPayload(app, x, vals, p.counter, ring.head, ring.slots)
		}}
	})
	if err != nil {
		return nil, nil, err
	}
	p.ring = ring
	s.mu.Lock()
	s.probes = append(s.probes, p)
	s.rings = append(s.rings, ring)
	if s.stopDrain == nil {
		stop := make(chan struct{})
		s.stopDrain = stop
		go s.drainer(stop)
	}
	s.mu.Unlock()
	return p, ring, nil
}

// recordPayload appends: save rax and the flags, count the hit, evaluate x
// (if any); where it holds, take a ticket and write vals into its slot.
func (e *emitter) recordPayload(app uint64, x *Expr, vals []Value, counter, head, slots uint64) error {
	g := newCondGen(e, app)
	e.add(leaSkipRedZone, Entry{AppPC: app, Payload: true, AppRegs: true, FlagsAt: -1})
	e.add(pushfq, Entry{AppPC: app, Payload: true, AppRegs: true, SPAdjust: redZone, FlagsAt: -1})
	e.add([]byte{0x50}, Entry{AppPC: app, Payload: true, AppRegs: true, SPAdjust: redZone + 8, FlagsAt: 0}) // push %rax
	no := g.newLabel()
	if x != nil {
		if err := g.jumpIfFalse(x, no); err != nil {
			return fmt.Errorf("condition %s: %w", x, err)
		}
	}
	inc, err := lockIncRIP(e.pc(), counter)
	if err != nil {
		return err
	}
	e.add(inc, g.body(0))
	e.add([]byte{0x51}, g.body(0)) // push %rcx
	g.extra, g.saved["rcx"] = 8, -8
	e.add([]byte{0x52}, g.body(0)) // push %rdx
	g.extra, g.saved["rdx"] = 16, -16
	e.add([]byte{0xb9, 1, 0, 0, 0}, g.body(0))               // mov $1,%ecx
	xadd := []byte{0xf0, 0x48, 0x0f, 0xc1, 0x0d, 0, 0, 0, 0} // lock xadd %rcx,head(%rip)
	if err := ripRel32(xadd, 5, e.pc(), len(xadd), head); err != nil {
		return err
	}
	e.add(xadd, g.body(0))
	e.add([]byte{0x48, 0x89, 0xca}, g.body(0)) // mov %rcx,%rdx
	and := []byte{0x81, 0xe2, 0, 0, 0, 0}      // and $RingCap-1,%edx
	binary.LittleEndian.PutUint32(and[2:], RingCap-1)
	e.add(and, g.body(0))
	e.add([]byte{0x48, 0xc1, 0xe2, 6}, g.body(0)) // shl $6,%rdx (recordSize)
	lea := []byte{0x48, 0x8d, 0x05, 0, 0, 0, 0}   // lea slots(%rip),%rax
	if err := ripRel32(lea, 3, e.pc(), len(lea), slots); err != nil {
		return err
	}
	e.add(lea, g.body(0))
	e.add([]byte{0x48, 0x01, 0xc2}, g.body(0))                   // add %rax,%rdx
	e.add([]byte{0x48, 0xc7, 0x42, 0x38, 0, 0, 0, 0}, g.body(0)) // movq $0,56(%rdx): uncommitted
	for k, v := range vals {
		if err := g.load(v); err != nil {
			return fmt.Errorf("value %s: %w", v, err)
		}
		e.add([]byte{0x48, 0x89, 0x42, byte(8 * k)}, g.body(0)) // mov %rax,8k(%rdx)
	}
	e.add([]byte{0x48, 0x8d, 0x41, 0x01}, g.body(0)) // lea 1(%rcx),%rax
	e.add([]byte{0x48, 0x89, 0x42, 0x38}, g.body(0)) // mov %rax,56(%rdx): committed
	e.add([]byte{0x5a}, g.body(0))                   // pop %rdx
	g.extra = 8
	delete(g.saved, "rdx")
	e.add([]byte{0x59}, g.body(0)) // pop %rcx
	g.extra = 0
	delete(g.saved, "rcx")
	g.place(no)
	e.add([]byte{0x58}, g.body(0)) // pop %rax
	e.add(popfq, Entry{AppPC: app, Payload: true, AppRegs: true, SPAdjust: redZone + 8, FlagsAt: 0})
	e.add(leaBackRedZone, Entry{AppPC: app, Payload: true, AppRegs: true, SPAdjust: redZone, FlagsAt: -1})
	return g.resolve()
}

// drainer drains the set's rings until stop is closed.
func (s *Set) drainer(stop chan struct{}) {
	t := time.NewTicker(drainEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.drainAll()
		}
	}
}

// DrainAll drains every ring of the set now (a caller that interleaves
// other output with the records' calls it to keep the order of the hits).
func (s *Set) DrainAll() { s.drainAll() }

// drainAll drains every ring of the set.
func (s *Set) drainAll() {
	s.mu.Lock()
	rings := append([]*Ring(nil), s.rings...)
	s.mu.Unlock()
	for _, r := range rings {
		r.Drain()
	}
}

// Drain delivers the records written since the last drain, in ticket order,
// and counts those lost. It never stops the program.
func (r *Ring) Drain() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.p.set
	if s.exited.Load() {
		return errors.New("the process is gone")
	}
	var hb [8]byte
	if _, err := s.proc.ReadMemory(r.head, hb[:]); err != nil {
		return err
	}
	head := binary.LittleEndian.Uint64(hb[:])
	if head <= r.next {
		return nil
	}
	var lost uint64
	if head-r.next > RingCap {
		lost = head - r.next - RingCap
		r.next = head - RingCap
	}
	buf := make([]byte, RingCap*recordSize)
	if _, err := s.proc.ReadMemory(r.slots, buf); err != nil {
		return err
	}
	again := make([]byte, RingCap*recordSize)
	if _, err := s.proc.ReadMemory(r.slots, again); err != nil {
		return err
	}
	vals := make([]uint64, r.nvals)
	for ; r.next < head; r.next++ {
		t := r.next
		off := (t % RingCap) * recordSize
		c1 := binary.LittleEndian.Uint64(buf[off+56:])
		c2 := binary.LittleEndian.Uint64(again[off+56:])
		if c1 == t+1 && c2 == t+1 {
			for k := range vals {
				vals[k] = binary.LittleEndian.Uint64(buf[off+uint64(8*k):])
			}
			r.recs++
			if r.onRec != nil {
				r.onRec(vals)
			}
			continue
		}
		if c1 > t+1 || c2 > t+1 {
			lost++ // overwritten by a writer a lap ahead
			continue
		}
		break // not committed yet: its writer is still in the payload
	}
	if lost > 0 {
		r.lost += lost
		if r.onLost != nil {
			r.onLost(lost)
		}
	}
	return nil
}

// glibcTIDOffset is where glibc's struct pthread keeps the thread's ID on
// x86-64 (tid, right after the TCB header and the list links), from glibc
// 2.26 to today; TIDOffset checks it in the process before it is used.
const glibcTIDOffset = 0x2d0

// TIDOffset returns the offset from the thread pointer (%fs) where every
// thread of the process keeps its own thread ID, so that a payload can
// record which thread hit (Value{FS: true, Off: off, Size: 4}). Every thread
// must be stopped, past the dynamic linker's TLS setup (at main, or
// attached); an error says why there is none.
func (s *Set) TIDOffset() (int64, error) {
	threads := s.proc.Children()
	if len(threads) == 0 {
		return 0, errors.New("the process has no threads")
	}
	for _, th := range threads {
		regs, err := th.Registers()
		if err != nil {
			return 0, fmt.Errorf("thread %d: %w", th.TID(), err)
		}
		fs, err := regs.Uint64(regs.Arch.ByName("fs_base"))
		if err != nil || fs == 0 {
			return 0, fmt.Errorf("thread %d has no thread pointer yet", th.TID())
		}
		var b [4]byte
		if _, err := s.proc.ReadMemory(fs+glibcTIDOffset, b[:]); err != nil {
			return 0, fmt.Errorf("thread %d: reading its thread block: %w", th.TID(), err)
		}
		if got := int(int32(binary.LittleEndian.Uint32(b[:]))); got != th.TID() {
			return 0, fmt.Errorf("thread %d: the word at %%fs:%#x is %d, not its ID (not glibc's thread block)", th.TID(), glibcTIDOffset, got)
		}
	}
	return glibcTIDOffset, nil
}
