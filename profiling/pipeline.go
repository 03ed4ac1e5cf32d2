package profiling

import (
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/sondedbg/sonde/memimage"
	"github.com/sondedbg/sonde/perfdata"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/symbols/elfsym"
	"github.com/sondedbg/sonde/unwind"
	"github.com/sondedbg/sonde/unwind/snapshot"
)

// A recording's samples are unwound on every core. One goroutine reads the
// records in time order and follows the mappings, so each sample is bound
// to the address space of its time (a snapshot.Process, never changed once
// built); it hands samples out in batches. Workers unwind and name the
// batches' samples, each with its own unwinders and name memo; the worker
// that finishes the oldest batch not yet delivered hands its samples (and
// those of the finished batches after it) to the caller's function, in
// order, so the samples are consumed where they were just made and no
// goroutine waits for the next batch only to pass it on (a wake-up per
// batch). At most a few batches exist at once, so memory stays bounded
// whatever the file's size.

// batchSize is the number of samples one worker takes at a time: enough to
// make the hand-over cheap, few enough to keep the cores even at the end
// and the file's chunks in flight few: the batches' stacks stay in their
// chunks until unwound, and every chunk more is fresh memory, whose first
// touch costs a page fault per 4 KiB (~18 µs of CPU each on this VM: 64
// made 600 more faults on 1 GB than 16, 5% of the CPU).
const batchSize = 16

// batch is a run of consecutive samples and, once a worker is done, their stacks.
type batch struct {
	jobs    []job
	ips     []uint64 // the jobs' callchain ips
	stacks  []byte   // copies of stacks whose records are not in place
	samples []Sample
	frames  []Frame
	ends    []int // samples[i]'s frames end at frames[ends[i]]
	// chunks are the input chunks the jobs' bodies lie in, each retained
	// once per run of jobs in it (not once per job: the count is an
	// atomic on a line the reading and unwinding cores would pass back
	// and forth for every sample), released when the batch is unwound.
	chunks []*perfdata.Chunk
	// regs holds the user registers of jobs decoded in prepare (a
	// non-lazy record's); a lazy job's are decoded into the worker's own.
	regs []unwind.Registers
	err  error  // the reader's error after the last job, if any
	seq  uint64 // the batch's place in the recording (Each)
	done bool   // unwound, waiting for the batches before it (Each, under delivery.mu)
	// retain: the jobs outlive the record they come from (Each), so the
	// chunks of their bodies (a lazy Sorter's samples, which the workers
	// decode) are retained until the worker is done with them.
	retain bool
}

func (bt *batch) reset() {
	bt.jobs = bt.jobs[:0]
	bt.ips = bt.ips[:0]
	bt.stacks = bt.stacks[:0]
	bt.regs = bt.regs[:0]
	bt.err = nil
	bt.done = false
}

// keep copies a stack into the batch.
func (bt *batch) keep(b []byte) []byte {
	if cap(bt.stacks)-len(bt.stacks) < len(b) {
		// A fresh buffer: the jobs before keep their slices of the old one.
		bt.stacks = make([]byte, 0, max(2*cap(bt.stacks), len(b), 1<<16))
	}
	start := len(bt.stacks)
	bt.stacks = append(bt.stacks, b...)
	return bt.stacks[start:len(bt.stacks):len(bt.stacks)]
}

// delivery hands the unwound batches to Each's function in order.
type delivery struct {
	mu      sync.Mutex
	pending []*batch // pending[seq % len]: the batch seq, sent and not yet delivered
	next    uint64   // the seq of the next batch to deliver
	fn      func(*Sample) error
	err     error
	quit    chan struct{} // closed at the first error: the reader stops
	free    chan *batch
	rec     *Recording
}

// sent registers a batch the reader hands out, before any worker has it.
func (d *delivery) sent(bt *batch, seq uint64) {
	bt.seq = seq
	d.mu.Lock()
	d.pending[seq%uint64(len(d.pending))] = bt
	d.mu.Unlock()
}

// finished takes a batch a worker unwound and delivers every batch that is
// now next in order.
func (d *delivery) finished(bt *batch) {
	d.mu.Lock()
	defer d.mu.Unlock()
	bt.done = true
	for {
		i := d.next % uint64(len(d.pending))
		b := d.pending[i]
		if b == nil || b.seq != d.next || !b.done {
			return
		}
		d.pending[i] = nil
		d.next++
		d.deliver(b)
		d.free <- b // never blocks: it holds every batch
	}
}

func (d *delivery) deliver(bt *batch) {
	if d.err != nil {
		return
	}
	for i := range bt.samples {
		d.rec.Samples++
		if err := d.fn(&bt.samples[i]); err != nil {
			d.stop(err)
			return
		}
	}
	if bt.err != nil {
		d.stop(bt.err)
	}
}

func (d *delivery) stop(err error) {
	d.err = err
	close(d.quit)
}

// Each calls fn with every sample's stack, in time order; the Sample is
// valid during the call. fn is called from the workers' goroutines, one
// call at a time.
func (rec *Recording) Each(fn func(*Sample) error) error {
	workers := runtime.GOMAXPROCS(0)
	nb := 2*workers + 2
	d := &delivery{pending: make([]*batch, nb), fn: fn, quit: make(chan struct{}), free: make(chan *batch, nb), rec: rec}
	for i := 0; i < nb; i++ {
		d.free <- &batch{retain: true}
	}
	work := make(chan *batch, nb)
	var wg sync.WaitGroup
	run := func() {
		defer wg.Done()
		w := newWorker(rec.b)
		for bt := range work {
			w.run(bt)
			d.finished(bt)
		}
	}
	wg.Add(workers)
	for i := 1; i < workers; i++ {
		go run()
	}
	go rec.dispatch(d, work)
	run() // the caller's goroutine is a worker too
	wg.Wait()
	rec.checkKernel()
	return d.err
}

// dispatch reads the records in time order, follows the address spaces and
// hands out the samples in batches, until the end, an error or quit.
func (rec *Recording) dispatch(d *delivery, work chan *batch) {
	defer close(work)
	var bt *batch
	var seq uint64
	next := func() bool {
		select {
		case bt = <-d.free:
			bt.reset()
			return true
		case <-d.quit:
			return false
		}
	}
	send := func() {
		d.sent(bt, seq)
		seq++
		work <- bt
		bt = nil
	}
	if !next() {
		return
	}
	for {
		r, err := rec.sorter.Next()
		if err != nil {
			if err != io.EOF {
				bt.err = err
			}
			send()
			return
		}
		if r.Type != perfdata.RecordSample {
			rec.b.Add(r)
			continue
		}
		rec.b.prepare(r, bt)
		if len(bt.jobs) == batchSize {
			send()
			if !next() {
				return
			}
		}
	}
}

// maxWalkers bounds a worker's unwinders (one per address space it met).
const maxWalkers = 64

// walker is one worker's unwinder for one address space.
type walker struct {
	u   *unwind.Unwinder
	mem sampleMem
	jit jitCode // the sample's JIT functions (jitwalk.go)
}

func (w *worker) walker(proc *snapshot.Process) *walker {
	if w.lastProc == proc && w.lastWalker != nil {
		return w.lastWalker // a batch's samples are mostly of one process
	}
	wk := w.walkers[proc]
	if wk == nil {
		if len(w.walkers) >= maxWalkers {
			clear(w.walkers)
		}
		wk = &walker{mem: sampleMem{img: proc.Image()}}
		// A worker's consecutive samples are mostly of one thread,
		// whose outer frames stay put: ReuseFrames replays them once
		// it has read their bytes again and found them unchanged.
		wk.u = unwind.New(&wk.mem, entryLookup{proc, &wk.jit}, &unwind.Options{ReuseFrames: true})
		w.walkers[proc] = wk
	}
	w.lastProc, w.lastWalker = proc, wk
	return wk
}

// entryLookup is a process as the unwinder asks it, a function's start
// from the ELF symbols. The unwinder asks only for a pc without CFI (its
// frameless and prologue rules): hand-written assembly such as the dynamic
// linker's _start, where a recording's first sample often lies and which
// DWARF does not describe, so that the DWARF lookup names it from the same
// ELF symbol, but only after building the unit's line table and scopes
// (8% of the CPU of a small recording's perf folded). A split-off part
// (foo.cold, whose DWARF function starts elsewhere) and an address no
// symbol holds get the DWARF answer.
type entryLookup struct {
	*snapshot.Process
	*jitCode
}

func (l entryLookup) SymbolInfo(um *unwind.Module, pc uint64) ([]unwind.Symbol, error) {
	if bin := l.Binary(um); bin != nil && pc >= um.Bias {
		if isEntry(bin, pc-um.Bias) {
			return []unwind.Symbol{{FuncStart: pc}}, nil
		}
		if t, err := bin.Symbols(); err == nil {
			if sym, off, ok := t.Lookup(pc - um.Bias); ok && off <= pc && sym.Kind != elfsym.KindObject && !strings.Contains(sym.Name, ".cold") {
				return []unwind.Symbol{{Function: sym.Name, FuncStart: pc - off}}, nil
			}
		}
	}
	return l.Process.SymbolInfo(um, pc)
}

// isEntry reports whether addr (link-time) is the file's ELF entry point,
// which starts a function (the dynamic linker's _start, where the first
// sample of an exec lies): the unwinder needs only that start, and the
// symbol table that would also give it costs ~4 ms of CPU to read for
// ld.so's debug file, for this one address.
func isEntry(bin *symbols.Binary, addr uint64) bool {
	ef := bin.ELF()
	return ef != nil && ef.Entry != 0 && addr == ef.Entry
}

// sampleMem is the memory of one sample as the unwinder reads it: the stack
// copy, and the mapped files (code, read-only data) from the image. Other
// addresses are unreadable, answered without asking the image.
type sampleMem struct {
	stack     []byte
	stackAddr uint64
	maps      []snapshot.Mapping // sorted, disjoint
	img       *memimage.Image
	// readers[i] reads maps[i]'s file: a memimage.Reader keeps a window
	// of one section, and a walk goes back and forth between files.
	readers []*memimage.Reader
}

func (m *sampleMem) reset(stack []byte, addr uint64, maps []snapshot.Mapping) {
	m.stack, m.stackAddr = stack, addr
	if len(maps) != len(m.maps) || (len(maps) > 0 && &maps[0] != &m.maps[0]) {
		m.maps = maps
		clear(m.readers)
		m.readers = append(m.readers[:0], make([]*memimage.Reader, len(maps))...)
	}
}

// ReadMemory implements unwind.CopyIn.
func (m *sampleMem) ReadMemory(buf []byte, addr uint64) (int, error) {
	if off := addr - m.stackAddr; addr >= m.stackAddr && off < uint64(len(m.stack)) {
		return copy(buf, m.stack[off:]), nil
	}
	// A mapped file's bytes, up to the mapping's end.
	i := sort.Search(len(m.maps), func(i int) bool { return m.maps[i].End > addr })
	if i == len(m.maps) || addr < m.maps[i].Start || (m.maps[i].Path == "" && m.maps[i].Data == nil) {
		return 0, nil
	}
	want := buf
	if n := m.maps[i].End - addr; n < uint64(len(want)) {
		want = want[:n]
	}
	rd := m.readers[i]
	if rd == nil {
		rd = m.img.NewReader(memimage.AnyASID)
		m.readers[i] = rd
	}
	n, _ := rd.ReadFull(want, addr)
	return n, nil
}

// ViewMemory implements unwind.MemoryView: the stack copy's bytes.
func (m *sampleMem) ViewMemory(addr uint64, n int) []byte {
	if off := addr - m.stackAddr; addr >= m.stackAddr && off <= uint64(len(m.stack)) && uint64(n) <= uint64(len(m.stack))-off {
		return m.stack[off : off+uint64(n)]
	}
	return nil
}

// ReadRegister implements unwind.CopyIn; walks start from InitRegisters.
func (m *sampleMem) ReadRegister(int) (uint64, bool) { return 0, false }
