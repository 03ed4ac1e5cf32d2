package probes

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Latency probes time calls without touching the stack's return addresses
// (a hijacked return address breaks C++ exception unwinding, backtraces and
// longjmp): the function's entry records (stack pointer, TSC) in a slot table
// in the cache, each exit (every ret and tail jump, found by decoding) looks
// the slot up by the same stack pointer, which is the entry's again at a ret
// or tail jump, and adds the elapsed ticks to a log2 histogram. A call left by
// an exception (or longjmp) leaves its slot behind, to be overwritten; a call
// already in flight when the probe went in finds no slot and is not counted.
// Two calls whose stack pointers hash alike (other threads, recursion) share a
// slot: the older loses its sample, none is ever wrong.

const (
	latencySlots = 1024 // entries of the slot table, a power of two
	slotSize     = 16   // stack pointer, TSC
	// HistBuckets is the histogram's size: bucket k counts calls of
	// [2^k, 2^(k+1)) TSC ticks (bucket 0 also those of 0 and 1).
	HistBuckets = 64
	// latencyData is the data a latency probe takes in the cache: the slot
	// table, the histogram and the calls counter.
	latencyData = latencySlots*slotSize + HistBuckets*8 + 8
)

// latencyLayout is where a latency probe's data lives.
type latencyLayout struct {
	slots, hist, calls uint64
}

func newLatencyLayout(base uint64) latencyLayout {
	return latencyLayout{slots: base, hist: base + latencySlots*slotSize, calls: base + latencySlots*slotSize + HistBuckets*8}
}

// ripRel32 puts at b[off:] the rel32 from the end of the instruction (at
// pc+end) to target.
func ripRel32(b []byte, off int, pc uint64, end int, target uint64) error {
	disp := int64(target) - int64(pc+uint64(end))
	if disp != int64(int32(disp)) {
		return fmt.Errorf("%#x out of rel32 reach of %#x", target, pc)
	}
	binary.LittleEndian.PutUint32(b[off:], uint32(int32(disp)))
	return nil
}

// The save sequence both latency payloads start with, and the restore they
// end with: flags, rax, rcx, rdx, rsi below the red zone.
var (
	latSave    = []byte{0x48, 0x8d, 0x64, 0x24, 0x80, 0x9c, 0x50, 0x51, 0x52, 0x56}
	latRestore = []byte{0x5e, 0x5a, 0x59, 0x58, 0x9d, 0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00}
	// rdtsc into rax; rcx = the application's rsp; rdx = its slot's address
	// (rsi loaded with the table by the rel32 at latKeyTable).
	latKey = []byte{
		0x0f, 0x31, // rdtsc
		0x48, 0xc1, 0xe2, 0x20, // shl $32,%rdx
		0x48, 0x09, 0xd0, // or %rdx,%rax
		0x48, 0x8d, 0x8c, 0x24, 0xa8, 0x00, 0x00, 0x00, // lea 168(%rsp),%rcx
		0x48, 0x89, 0xca, // mov %rcx,%rdx
		0x48, 0xc1, 0xea, 0x04, // shr $4,%rdx
		0x48, 0x89, 0xce, // mov %rcx,%rsi
		0x48, 0xc1, 0xee, 0x11, // shr $17,%rsi
		0x48, 0x31, 0xf2, // xor %rsi,%rdx
		0x81, 0xe2, 0xff, 0x03, 0x00, 0x00, // and $(latencySlots-1),%edx
		0x48, 0xc1, 0xe2, 0x04, // shl $4,%rdx
		0x48, 0x8d, 0x35, 0, 0, 0, 0, // lea slots(%rip),%rsi
		0x48, 0x01, 0xf2, // add %rsi,%rdx
	}
	latKeyTable = 47 // offset of the rel32 in latKey
	latEntry    = []byte{
		0x48, 0x89, 0x0a, // mov %rcx,(%rdx)
		0x48, 0x89, 0x42, 0x08, // mov %rax,8(%rdx)
		0xf0, 0x48, 0xff, 0x05, 0, 0, 0, 0, // lock incq calls(%rip)
	}
	latEntryCalls = 11
	latExit       = []byte{
		0x48, 0x3b, 0x0a, // cmp (%rdx),%rcx
		0x75, 0x1f, // jne .+31 (past the increment)
		0x48, 0xc7, 0x02, 0x00, 0x00, 0x00, 0x00, // movq $0,(%rdx)
		0x48, 0x2b, 0x42, 0x08, // sub 8(%rdx),%rax
		0x48, 0x83, 0xc8, 0x01, // or $1,%rax
		0x48, 0x0f, 0xbd, 0xc8, // bsr %rax,%rcx
		0x48, 0x8d, 0x35, 0, 0, 0, 0, // lea hist(%rip),%rsi
		0xf0, 0x48, 0xff, 0x04, 0xce, // lock incq (%rsi,%rcx,8)
	}
	latExitHist = 27
)

// latencySpills says where the payload keeps the application's registers,
// as offsets from rsp once all are saved.
var latencySpills = map[string]int64{"rsi": 0, "rdx": 8, "rcx": 16, "rax": 24, "rflags": 32}

// latencyPayload appends the entry (entry true) or exit payload for the
// application instruction at app.
func (e *emitter) latencyPayload(app uint64, l latencyLayout, entry bool) error {
	pay := Entry{AppPC: app, Payload: true, FlagsAt: -1}
	// The save sequence, instruction by instruction, for the table.
	steps := []struct {
		n     int
		adj   int64
		saved bool
	}{{5, 0, false}, {1, redZone, false}, {1, redZone + 8, false}, {1, redZone + 16, false}, {1, redZone + 24, false}, {1, redZone + 32, false}}
	off := 0
	for _, s := range steps {
		en := pay
		en.AppRegs, en.SPAdjust = true, s.adj
		e.add(latSave[off:off+s.n], en)
		off += s.n
	}
	body := append([]byte(nil), latKey...)
	var tail []byte
	if entry {
		tail = append([]byte(nil), latEntry...)
	} else {
		tail = append([]byte(nil), latExit...)
	}
	start := e.pc()
	if err := ripRel32(body, latKeyTable, start, latKeyTable+4, l.slots); err != nil {
		return err
	}
	tailPC := start + uint64(len(body))
	if entry {
		if err := ripRel32(tail, latEntryCalls, tailPC, latEntryCalls+4, l.calls); err != nil {
			return err
		}
	} else {
		if err := ripRel32(tail, latExitHist, tailPC, latExitHist+4, l.hist); err != nil {
			return err
		}
	}
	spilled := pay
	spilled.SPAdjust, spilled.FlagsAt, spilled.Spills = redZone+40, 32, latencySpills
	e.add(append(body, tail...), spilled)
	// The restore: pops give the registers back one by one.
	e.add(latRestore[:4], spilled)
	after := pay
	after.AppRegs, after.SPAdjust, after.FlagsAt = true, redZone+8, 0
	e.add(latRestore[4:5], after)
	after.FlagsAt, after.SPAdjust = -1, redZone
	e.add(latRestore[5:], after)
	return nil
}

// latencySites plans a latency probe on the function entered at addr: the
// entry's range and one range ending with each exit, ranges that overlap
// merged into one; and the hooks (entry payload at addr, exit payload before
// each exit).
func latencySites(fn Function, addr uint64, l latencyLayout) ([]Site, map[uint64]hook, error) {
	insns, err := Decode(fn)
	if err != nil {
		return nil, nil, err
	}
	index := map[uint64]int{}
	for i := range insns {
		index[insns[i].Address] = i
	}
	entry, err := Analyze(fn, addr)
	if err != nil {
		return nil, nil, err
	}
	hooks := map[uint64]hook{addr: func(e *emitter, app uint64) error { return e.latencyPayload(app, l, true) }}
	exitHook := func(e *emitter, app uint64) error { return e.latencyPayload(app, l, false) }
	type span struct{ lo, hi uint64 }
	spans := []span{{entry.Addr, entry.Addr + uint64(entry.Len)}}
	exits, err := Exits(fn)
	if err != nil {
		return nil, nil, err
	}
	if len(exits) == 0 {
		return nil, nil, unsafe(addr, "no ret or tail jump found in %s", fn.Name)
	}
	for _, x := range exits {
		site, err := exitSite(insns, index[x], padLen(fn))
		if err != nil {
			var ue *UnsafeError
			if errors.As(err, &ue) {
				return nil, nil, unsafe(addr, "the exit at %#x: %s", x, ue.Reason)
			}
			return nil, nil, err
		}
		hooks[x] = exitHook
		spans = append(spans, span{site.Addr, site.Addr + uint64(site.Len)})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		last := &merged[len(merged)-1]
		if sp.lo < last.hi {
			last.hi = max(last.hi, sp.hi)
			continue
		}
		merged = append(merged, sp)
	}
	var sites []Site
	for _, sp := range merged {
		i, ok1 := index[sp.lo]
		j, ok2 := index[sp.hi]
		pad := 0
		if !ok2 && sp.hi >= fn.Hi() {
			j, ok2, pad = len(insns), true, int(sp.hi-fn.Hi())
		}
		if !ok1 || !ok2 {
			return nil, nil, unsafe(addr, "internal error: range [%#x, %#x) not on instruction boundaries", sp.lo, sp.hi)
		}
		site, err := checkRange(insns, i, j, pad)
		if err != nil {
			return nil, nil, err
		}
		sites = append(sites, site)
	}
	return sites, hooks, nil
}

// AddLatency adds a probe at the entry addr of fn that counts calls and
// times them (Histogram) with exit probes at every ret and tail jump. When
// the exits cannot all be patched it is a counting probe (or breakpoint)
// whose Fallback says why there is no histogram.
func (s *Set) AddLatency(loc string, addr uint64, fn *Function) (*Probe, error) {
	if fn == nil {
		return s.AddCount(loc, addr, nil)
	}
	shadowed := s.shadow(*fn)
	p := &Probe{Location: loc, Addr: addr, set: s, Kind: KindProbe}
	var layout latencyLayout
	sites, _, err := latencySites(shadowed, addr, latencyLayout{})
	if err == nil {
		err = s.patchIn(p, shadowed, sites, latencyData, func(data uint64) map[uint64]hook {
			layout = newLatencyLayout(data)
			p.counter, p.lat = layout.calls, &layout
			_, hk, _ := latencySites(shadowed, addr, layout)
			return hk
		})
	}
	if err == nil {
		s.mu.Lock()
		s.probes = append(s.probes, p)
		s.mu.Unlock()
		return p, nil
	}
	p.lat = nil
	q, err2 := s.AddCount(loc, addr, fn)
	if err2 != nil {
		return nil, err2
	}
	why := err.Error()
	var ue *UnsafeError
	if errors.As(err, &ue) {
		why = ue.Reason
	}
	if q.Fallback == "" {
		q.Fallback = "no latency: " + why
	}
	return q, nil
}
