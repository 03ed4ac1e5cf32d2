package probes

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sondedbg/sonde/target"
	"github.com/sondedbg/sonde/target/ptrace"
	"github.com/sondedbg/sonde/translate"
)

// Kind says how a probe is implemented.
type Kind string

const (
	KindProbe      Kind = "probe"      // a jump to a trampoline: no trap
	KindBreakpoint Kind = "breakpoint" // an int3 whose hits sonde counts
)

// Probe is one counting probe.
type Probe struct {
	Location string // as the user gave it
	Addr     uint64
	Kind     Kind
	// Fallback says why a breakpoint was used instead of a jump ("" for a
	// jump probe).
	Fallback string

	set       *Set
	counter   uint64 // KindProbe: the counter's address in the cache
	final     atomic.Uint64
	haveFinal atomic.Bool
	bp        *target.Breakpoint
	bpHits    atomic.Uint64
	onHit     func(thread *target.Context)
	// Conditional probes: the trap is a breakpoint on the payload's nop
	// (trapInCache), or, for a breakpoint fallback, cond is evaluated in sonde
	// and condHits counts the hits where it held.
	trapInCache bool
	cond        *Cond
	condHits    atomic.Uint64
	patches     []patch
	installed   bool // guarded by Set.mu
	// unredirect ends a conditional stop's resume redirect (AddStopIf).
	unredirect func()
	// ring is a recording probe's ring buffer (AddRecordIf).
	ring *Ring
	// Latency probes: where the histogram is, and its last value read.
	lat       *latencyLayout
	histMu    sync.Mutex
	finalHist [HistBuckets]uint64
}

// patch is one patched range of a probe and its trampoline.
type patch struct {
	site  Site
	orig  []byte // the application's bytes under the patch
	bytes []byte
	table *Table
}

func (pt *patch) overlaps(lo, hi uint64) bool {
	return pt.site.Addr < hi && lo < pt.site.Addr+uint64(pt.site.Len)
}

// Set is the probes of one live process.
type Set struct {
	tg      *target.Target
	proc    *target.Context
	backend *ptrace.Backend

	mu       sync.Mutex
	caches   []*cache
	probes   []*Probe
	gone     bool // the process exited or was detached: counters are final
	unhook   func()
	unlisten func()
	// live is the installed jump probes, for reading counters where s.mu
	// cannot be taken (at a thread's exit, on the tracer thread, which may be
	// inside an operation holding s.mu).
	live atomic.Pointer[[]*Probe]
	// exited is set when the process is gone: nothing is left to remove.
	exited atomic.Bool
	// tt is the address space's translation table, where the trampolines'
	// tables are (ttStarts: the entries the set added). Guarded by mu.
	tt       *translate.Table
	ttStarts []uint64
	// rings are the recording probes' ring buffers, drained every
	// drainEvery by a goroutine until stopDrain is closed.
	rings     []*Ring
	stopDrain chan struct{}
	// texts are the modules' executable bytes, by file name, for the scan
	// for branches from other functions (incoming.go).
	texts map[string][]moduleText
	// patched is every range ever patched, with the application's bytes,
	// for the backend to put back into fork children (OnForkChild; a range
	// removed since is harmless to restore). Guarded by forkMu only: the
	// backend asks on the tracer thread, which may be inside an operation
	// holding mu.
	forkMu  sync.Mutex
	patched []ptrace.TextPatch
}

// ErrNotLive is returned for targets other than a live ptrace process.
var ErrNotLive = errors.New("fast probes need a live process (ptrace backend)")

// New makes an empty probe set for proc. Detaching from proc (or closing the
// target) removes every probe and frees the code caches first; when proc
// exits, the counters are read at its last thread's exit, while its memory
// still exists.
func New(tg *target.Target, proc *target.Context) (*Set, error) {
	b, ok := tg.Backend().(*ptrace.Backend)
	if !ok {
		return nil, ErrNotLive
	}
	s := &Set{tg: tg, proc: proc, backend: b}
	s.unhook = b.OnDetach(func(h *ptrace.Halted) error {
		if h.PID() != proc.PID() {
			return nil
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.readFinal()
		for _, p := range s.probes {
			if p.unredirect != nil {
				p.unredirect()
				p.unredirect = nil
			}
		}
		err := s.removeAll(h)
		s.gone = true
		if err != nil {
			return fmt.Errorf("probes of process %d: %w", proc.PID(), err)
		}
		return nil
	})
	// An exec replaces the address space: the probes and caches are gone
	// with the old one (nothing may be written back into the new program).
	unexec := tg.OnExec(func(p *target.Context) {
		if p == proc {
			s.exited.Store(true)
			// (The tracer thread may be inside an operation holding s.mu.)
			if s.mu.TryLock() {
				for _, c := range s.caches {
					if c.unregister != nil {
						c.unregister()
					}
				}
				s.dropTranslations()
				s.mu.Unlock()
			}
		}
	})
	unlisten := tg.AddSyncListener(func(e target.Event) bool {
		if e.Kind == target.EventExited && e.Context == proc && e.Exit != nil && !e.Exit.Detached {
			s.exited.Store(true)
		}
		if e.Kind == target.EventChanged && !e.Context.IsProcess() && e.Context.Process() == proc {
			if st, _, _ := e.Context.State(); st == target.StateExiting {
				s.readFinal()
			}
		}
		return false
	})
	// A fork child runs the application's code, not trampolines nobody
	// reads or removes (the code cache stays mapped in it, unused).
	unfork := b.OnForkChild(func(parent int) []ptrace.TextPatch {
		if parent != proc.PID() || s.exited.Load() {
			return nil // another process, or a program exec replaced
		}
		s.forkMu.Lock()
		defer s.forkMu.Unlock()
		return append([]ptrace.TextPatch(nil), s.patched...)
	})
	s.unlisten = func() { unexec(); unlisten(); unfork() }
	return s, nil
}

// Probes returns the probes in the order they were added.
func (s *Set) Probes() []*Probe {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Probe(nil), s.probes...)
}

// Hits returns the probe's hit count: read from the target's counter while
// the process lives, the last value read once it is gone.
func (p *Probe) Hits() uint64 {
	switch {
	case p.cond != nil:
		return p.condHits.Load()
	case p.Kind == KindBreakpoint || p.trapInCache:
		return p.bpHits.Load()
	}
	if v, err := p.read(); err == nil {
		return v
	}
	return p.final.Load()
}

func (p *Probe) read() (uint64, error) {
	s := p.set
	s.mu.Lock()
	gone := s.gone || s.exited.Load() || !p.installed
	s.mu.Unlock()
	if gone {
		return 0, errors.New("not installed")
	}
	var b [8]byte
	if _, err := s.proc.ReadMemory(p.counter, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// Snapshot keeps the counters' (and histograms', and rings') current values
// as their final ones, for when the address space goes without a thread's
// exit: call it where the program is about to exec (its execve), since at
// the exec event the old memory is gone already.
func (s *Set) Snapshot() { s.readFinal() }

// readFinal keeps the counters' current values for after the process is
// gone.
func (s *Set) readFinal() {
	live := s.live.Load()
	if live == nil {
		return
	}
	for _, p := range *live {
		if p.ring != nil {
			p.ring.Drain() // the last records, while the memory exists
		}
		var b [8]byte
		if _, err := s.proc.ReadMemory(p.counter, b[:]); err == nil {
			p.final.Store(binary.LittleEndian.Uint64(b[:]))
			p.haveFinal.Store(true)
		}
		if h, err := p.readHist(); err == nil {
			p.histMu.Lock()
			p.finalHist = h
			p.histMu.Unlock()
		}
	}
}

// Tables returns the probe's translation tables, one per patched range (none
// for a breakpoint).
func (p *Probe) Tables() []*Table {
	var out []*Table
	for _, pt := range p.patches {
		out = append(out, pt.table)
	}
	return out
}

// HasLatency reports whether the probe times calls (Histogram).
func (p *Probe) HasLatency() bool { return p.lat != nil }

// Histogram returns the latency histogram: bucket k counts calls that took
// [2^k, 2^(k+1)) TSC ticks (see TSCHz). Read from the target while it
// lives, the last value read afterwards.
func (p *Probe) Histogram() [HistBuckets]uint64 {
	if h, err := p.readHist(); err == nil {
		return h
	}
	p.histMu.Lock()
	defer p.histMu.Unlock()
	return p.finalHist
}

func (p *Probe) readHist() ([HistBuckets]uint64, error) {
	var h [HistBuckets]uint64
	if p.lat == nil {
		return h, errors.New("not a latency probe")
	}
	s := p.set
	if s.exited.Load() {
		return h, errors.New("gone")
	}
	buf := make([]byte, 8*HistBuckets)
	if _, err := s.proc.ReadMemory(p.lat.hist, buf); err != nil {
		return h, err
	}
	for i := range h {
		h[i] = binary.LittleEndian.Uint64(buf[8*i:])
	}
	return h, nil
}

// Translate maps a PC inside a trampoline of the set to the application:
// the table entry, or false when pc is not in sonde's generated code.
func (s *Set) Translate(pc uint64) (Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.probes {
		for _, pt := range p.patches {
			if t := pt.table; p.installed && pc >= t.Lo && pc < t.Hi {
				return t.Lookup(pc)
			}
		}
	}
	return Entry{}, false
}

// AddCount adds a counting probe at addr (named loc), inside fn. It patches
// a jump when the site is safe and falls back to a breakpoint otherwise
// (Probe.Fallback says why). An error means neither could be planted.
func (s *Set) AddCount(loc string, addr uint64, fn *Function) (*Probe, error) {
	p := &Probe{Location: loc, Addr: addr, set: s, Kind: KindProbe}
	why := ""
	if fn == nil {
		why = "no function symbol with a size contains the address, so the site cannot be checked"
	} else {
		err := s.install(p, s.shadow(*fn))
		var ue *UnsafeError
		switch {
		case err == nil:
		case errors.As(err, &ue):
			why = ue.Reason
		default:
			why = err.Error()
		}
	}
	if why != "" {
		if err := s.addBreakpoint(p, why); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	s.probes = append(s.probes, p)
	s.mu.Unlock()
	return p, nil
}

// shadow returns fn with the application's bytes under probes already
// planted in it.
func (s *Set) shadow(fn Function) Function {
	s.mu.Lock()
	defer s.mu.Unlock()
	code := append([]byte(nil), fn.Code...)
	for _, p := range s.probes {
		if !p.installed {
			continue
		}
		for _, pt := range p.patches {
			for i, c := range pt.orig {
				a := pt.site.Addr + uint64(i)
				if a >= fn.Lo && a < fn.Hi() {
					code[a-fn.Lo] = c
				}
			}
		}
	}
	fn.Code = code
	return fn
}

// AddBreakpoint adds a counting breakpoint at addr (named loc): each hit
// traps to sonde, which counts it and lets the thread go on.
func (s *Set) AddBreakpoint(loc string, addr uint64) (*Probe, error) {
	p := &Probe{Location: loc, Addr: addr, set: s}
	if err := s.addBreakpoint(p, ""); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.probes = append(s.probes, p)
	s.mu.Unlock()
	return p, nil
}

// AddTrap adds a counting breakpoint at addr (named loc) that also calls
// onHit with the thread stopped there (it may read registers and memory),
// for what a payload cannot do yet; why says so in Probe.Fallback.
func (s *Set) AddTrap(loc string, addr uint64, why string, onHit func(thread *target.Context)) (*Probe, error) {
	p := &Probe{Location: loc, Addr: addr, set: s, onHit: onHit}
	if err := s.addBreakpoint(p, why); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.probes = append(s.probes, p)
	s.mu.Unlock()
	return p, nil
}

func (s *Set) addBreakpoint(p *Probe, why string) error {
	bp, err := s.tg.SetBreakpoint(s.proc, target.BreakpointSpec{Addr: p.Addr, Kind: target.BreakpointSoftware, Internal: true,
		OnHit: func(th *target.Context, _ *target.Breakpoint) *target.SuspendReason {
			p.bpHits.Add(1)
			if p.onHit != nil {
				p.onHit(th)
			}
			return nil
		}})
	if err != nil {
		return fmt.Errorf("probe %s at %#x: %s; and no breakpoint either: %w", p.Location, p.Addr, why, err)
	}
	p.Kind, p.Fallback, p.bp = KindBreakpoint, why, bp
	return nil
}

// install analyses the site and, when it is safe, patches it.
func (s *Set) install(p *Probe, fn Function) error {
	site, err := Analyze(fn, p.Addr)
	if err != nil {
		return err
	}
	return s.patchIn(p, fn, []Site{site}, 8, func(data uint64) map[uint64]hook {
		p.counter = data
		return map[uint64]hook{site.Addr: func(e *emitter, app uint64) error { return e.countPayload(app, data) }}
	})
}

// patchIn installs p's patched ranges with every thread stopped: dataSize
// bytes of zeroed data in the cache, whose address hooks gets to make the
// payloads; one trampoline per site.
func (s *Set) patchIn(p *Probe, fn Function, sites []Site, dataLen int, hooks func(data uint64) map[uint64]hook) error {
	for _, q := range s.Probes() {
		if !q.installed {
			continue
		}
		for _, pt := range q.patches {
			for _, site := range sites {
				if pt.overlaps(site.Addr, site.Addr+uint64(site.Len)) {
					return &UnsafeError{Addr: p.Addr, Reason: fmt.Sprintf("the patched range [%#x, %#x) overlaps the probe %s at %#x", site.Addr, site.Addr+uint64(site.Len), q.Location, q.Addr)}
				}
			}
		}
	}
	regions, err := s.proc.MemoryMap()
	if err != nil {
		return err
	}
	if err := s.checkIncoming(regions, fn, sites); err != nil {
		return err
	}
	modName, modLo, modHi := moduleOf(regions, p.Addr)
	return s.backend.Halt(s.proc, func(h *ptrace.Halted) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.gone || s.exited.Load() {
			return errors.New("the process is gone")
		}
		var pts []patch
		for _, site := range sites {
			// The bytes in memory must be the ones analysed.
			cur := make([]byte, site.Len)
			if n, err := h.Read(site.Addr, cur); n != len(cur) {
				return fmt.Errorf("read site %#x: %w", site.Addr, err)
			}
			if want := fn.bytesAt(site.Addr, site.Len); !bytes.Equal(cur, want) {
				return &UnsafeError{Addr: p.Addr, Reason: fmt.Sprintf("the code at %#x in memory differs from what was analysed (a breakpoint or a patch is there)", site.Addr)}
			}
			pts = append(pts, patch{site: site, orig: cur})
		}
		c, err := s.cacheFor(h, regions, modName, modLo, modHi, fn, dataLen, len(sites)*maxTrampoline*2)
		if err != nil {
			return err
		}
		data, err := c.allocData(dataLen)
		if err != nil {
			return err
		}
		if err := h.WriteData(data, make([]byte, dataLen)); err != nil {
			return err
		}
		hk := hooks(data)
		for i := range pts {
			size := maxTrampoline
			for range hk {
				size += maxTrampoline
			}
			tramp, err := c.allocCode(size)
			if err != nil {
				return err
			}
			code, table, err := buildRange(pts[i].site, tramp, hk)
			if err != nil {
				return &UnsafeError{Addr: p.Addr, Reason: err.Error()}
			}
			if len(code) > size {
				return fmt.Errorf("internal error: trampoline of %d bytes, %d reserved", len(code), size)
			}
			if pts[i].bytes, err = sitePatch(pts[i].site, tramp); err != nil {
				return err
			}
			if err := h.WriteData(tramp, code); err != nil {
				return err
			}
			pts[i].table = table
		}
		// No thread may be inside a range when it changes (one at its first
		// byte is fine: it will run the jump).
		for _, pt := range pts {
			lo, hi := pt.site.Addr, pt.site.Addr+uint64(pt.site.Len)
			for tid, pc := range h.ThreadPCs() {
				if pc > lo && pc < hi {
					if err := h.StepOut(tid, lo+1, hi, 16); err != nil {
						return err
					}
				}
			}
		}
		for i, pt := range pts {
			if err := h.WriteText(pt.site.Addr, pt.bytes); err != nil {
				for _, done := range pts[:i] {
					h.WriteText(done.site.Addr, done.orig)
				}
				return &UnsafeError{Addr: p.Addr, Reason: err.Error()}
			}
		}
		p.patches, p.installed = pts, true
		s.forkMu.Lock()
		for _, pt := range pts {
			s.patched = append(s.patched, ptrace.TextPatch{Addr: pt.site.Addr, Orig: pt.orig})
		}
		s.forkMu.Unlock()
		s.addTranslations(h, "probe "+p.Location, pts)
		s.publish(p)
		return nil
	})
}

// maxTrampoline bounds one counting trampoline: payload (22 bytes), up to
// JumpLen+14 bytes of relocated instructions (each may grow when
// relocated), the jump back.
const maxTrampoline = 128

// moduleOf returns the file mapped at addr and the extent of its mappings.
func moduleOf(regions []target.MemoryRegion, addr uint64) (name string, lo, hi uint64) {
	for _, r := range regions {
		if addr >= r.Addr && addr < r.Addr+r.Size {
			name = r.FileName
			lo, hi = r.Addr, r.Addr+r.Size
		}
	}
	if name == "" {
		return name, lo, hi
	}
	for _, r := range regions {
		if r.FileName == name {
			lo, hi = min(lo, r.Addr), max(hi, r.Addr+r.Size)
		}
	}
	return name, lo, hi
}

// cacheFor returns a cache within reach of the function (and its module),
// mapping one if none is. Called with s.mu held.
func (s *Set) cacheFor(h *ptrace.Halted, regions []target.MemoryRegion, module string, modLo, modHi uint64, fn Function, dataLen, codeLen int) (*cache, error) {
	if modLo == 0 {
		modLo, modHi = fn.Lo, fn.Hi()
	}
	for _, c := range s.caches {
		if c.serves(fn.Lo, fn.Hi()) && c.serves(modLo, modHi) && c.codeNext+uint64(codeLen)+16 <= c.hi() && c.dataNext+uint64(dataLen) <= c.lo+dataSize {
			return c, nil
		}
	}
	// Caches already mapped are regions too.
	for _, c := range s.caches {
		regions = append(regions, target.MemoryRegion{Addr: c.lo, Size: cacheSize})
	}
	c, err := mapCache(h, regions, module, modLo, modHi)
	if err != nil {
		return nil, err
	}
	// No stop is ever reported inside the cache: the backend steps a thread
	// out first.
	c.unregister = s.backend.AddGenerated(h.PID(), c.lo, c.hi())
	s.caches = append(s.caches, c)
	return c, nil
}

// RemoveAll removes every probe (in reverse order) and frees every code
// cache; the text of every module is as it was before.
func (s *Set) RemoveAll() error {
	var errs []error
	s.mu.Lock()
	gone := s.gone || s.exited.Load()
	s.mu.Unlock()
	// Breakpoints inside trampolines go before the code they sit in.
	for _, p := range s.Probes() {
		if p.unredirect != nil {
			p.unredirect()
			p.unredirect = nil
		}
		if p.trapInCache && p.bp != nil {
			if err := s.tg.RemoveBreakpoint(p.bp); err != nil && !gone {
				errs = append(errs, err)
			}
			p.bp = nil
		}
	}
	if !gone {
		err := s.backend.Halt(s.proc, func(h *ptrace.Halted) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.readFinal()
			return s.removeAll(h)
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range s.Probes() {
		if p.bp != nil {
			if err := s.tg.RemoveBreakpoint(p.bp); err != nil && !gone {
				errs = append(errs, err)
			}
			p.bp = nil
		}
	}
	return errors.Join(errs...)
}

// Close removes every probe and stops following the process (the rings
// are drained a last time first).
func (s *Set) Close() error {
	s.drainAll()
	err := s.RemoveAll()
	s.mu.Lock()
	if s.stopDrain != nil {
		close(s.stopDrain)
		s.stopDrain = nil
	}
	s.mu.Unlock()
	s.unhook()
	s.unlisten()
	return err
}

// maxStepOut bounds the instructions a thread is stepped to leave a
// trampoline (payload, relocated instructions, jump back).
const maxStepOut = 64

// removeAll puts the application's bytes back under every probe, newest
// first, then frees the caches once no thread is inside one. Called with
// s.mu held and every thread stopped.
func (s *Set) removeAll(h *ptrace.Halted) error {
	var errs []error
	for i := len(s.probes) - 1; i >= 0; i-- {
		p := s.probes[i]
		if !p.installed {
			continue
		}
		failed := false
		for k := len(p.patches) - 1; k >= 0; k-- {
			pt := p.patches[k]
			if err := h.WriteText(pt.site.Addr, pt.orig); err != nil {
				errs = append(errs, fmt.Errorf("probe %s: restore %#x: %w", p.Location, pt.site.Addr, err))
				failed = true
			}
		}
		if !failed {
			p.installed = false
		}
	}
	s.publish(nil)
	for _, c := range s.caches {
		for tid, pc := range h.ThreadPCs() {
			if c.contains(pc) {
				if err := h.StepOut(tid, c.lo, c.hi(), maxStepOut); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...) // a cache a thread may still use stays
	}
	for _, c := range s.caches {
		if err := c.unmap(h); err != nil {
			errs = append(errs, err)
		}
	}
	s.caches = nil
	s.dropTranslations()
	return errors.Join(errs...)
}

// publish updates the list of installed jump probes after p was installed
// (or one was removed). Called with s.mu held.
func (s *Set) publish(p *Probe) {
	var live []*Probe
	for _, q := range s.probes {
		if q.installed {
			live = append(live, q)
		}
	}
	if p != nil {
		live = append(live, p) // not in s.probes yet
	}
	s.live.Store(&live)
}

type ptraceHalted = *ptrace.Halted
