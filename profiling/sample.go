package profiling

import (
	"debug/elf"
	"math/bits"

	"github.com/sondedbg/sonde/perfdata"
	"github.com/sondedbg/sonde/symbols/elfsym"
	"github.com/sondedbg/sonde/unwind"
	"github.com/sondedbg/sonde/unwind/snapshot"
)

// perfToDWARF maps perf's x86-64 user register numbers to DWARF's.
var perfToDWARF = [...]int{
	perfdata.RegAX: 0, perfdata.RegBX: 3, perfdata.RegCX: 2, perfdata.RegDX: 1,
	perfdata.RegSI: 4, perfdata.RegDI: 5, perfdata.RegBP: 6, perfdata.RegSP: 7,
	perfdata.RegIP: 16, perfdata.RegFlags: 49, perfdata.RegCS: 51, perfdata.RegSS: 52,
	12: -1, 13: -1, 14: -1, 15: -1, // ds, es, fs, gs: never sampled
	16: 8, 17: 9, 18: 10, 19: 11, 20: 12, 21: 13, 22: 14, 23: 15,
}

// userRegisters converts a sample's user registers into regs (zeroed). It
// walks the mask's bits once (the registers are stored in bit order),
// rather than asking Sample.Reg for each of the 24 registers, and keeps the
// known mask in a register until the end (a Set per register made each
// wait for the previous one's store of the mask).
func userRegisters(s *perfdata.Sample, regs *unwind.Registers) bool {
	*regs = unwind.Registers{}
	if s.RegsABI == 0 {
		return false
	}
	var known uint32
	vals := s.Regs
	for m := s.RegsMask; m != 0 && len(vals) > 0; m &= m - 1 {
		reg := uint(bits.TrailingZeros64(m))
		v := vals[0]
		vals = vals[1:]
		if reg >= uint(len(perfToDWARF)) {
			continue
		}
		if dw := perfToDWARF[reg]; dw >= 0 && dw < unwind.NumRegs {
			regs.Values[dw] = v
			known |= 1 << uint(dw)
		}
	}
	regs.Known = known
	const ipsp = 1<<16 | 1<<7
	return known&ipsp == ipsp
}

// job is one sample as the Builder saw it in time order: all a worker needs
// to produce its stack without the Builder's state, which later records
// change. Its slices are the batch's (or the record's, when in place).
type job struct {
	out  Sample // all but Frames
	proc *snapshot.Process
	maps []snapshot.Mapping // the address space when sampled (for reads outside the stack copy)
	misc uint16             // the record's misc (its cpumode)
	attr *perfdata.Attr
	off  int64  // the record's offset, for DecodeSample's errors
	body []byte // the undecoded record body (a lazy Sorter's sample, its chunk in batch.chunks)
	lazy bool   // body is to be decoded (by the worker)
	// The worker's part (decode): the callchain and the user registers.
	kernel    span   // kernel callchain ips in the batch's ips
	user      span   // user ips (a frame-pointer callchain, or the sampled ip)
	unknownPC uint64 // a user pc in no mapping, shown as [unknown]
	unknown   bool
	walk      bool // unwind the stack copy from the user registers
	// eagerRegs is 1 + the index of the job's registers in batch.regs
	// (decoded in prepare); 0: a lazy job's, in worker.regs. A job is
	// written on the reading core and read on a worker's: the registers
	// (140 bytes) are kept out of it.
	eagerRegs int32
	stack     []byte
}

// span is a stretch of one of a batch's buffers.
type span struct{ start, end int }

// prepare turns a sample record into a job for a worker, in time order: the
// address space and the command name are those at the sample's time. A
// lazy Sorter's sample (rec.Body undecoded) is decoded by the worker
// (decode): the reading goroutine, which every sample passes, does only
// what needs the recording's order.
func (b *Builder) prepare(rec *perfdata.Record, bt *batch) {
	s := &rec.Sample
	bt.jobs = append(bt.jobs, job{})
	j := &bt.jobs[len(bt.jobs)-1]
	j.out = Sample{PID: s.PID, TID: s.TID, Time: s.Time, Event: eventName(s.Attr)}
	j.out.HasCPU = s.Attr != nil && s.Attr.SampleType&perfdata.SampleCPU != 0
	sp := b.space(s.PID)
	j.out.Comm = b.threadComm(s.TID, sp)
	j.proc, j.maps = b.process(sp), sp.maps
	j.out.Maps = sp.maps
	j.misc, j.attr, j.off = rec.Misc, s.Attr, rec.Offset
	if !rec.Lazy {
		bt.regs = append(bt.regs, unwind.Registers{})
		j.eagerRegs = int32(len(bt.regs))
		b.decoded(s, j, &bt.regs[len(bt.regs)-1], bt)
		return
	}
	j.body, j.lazy = rec.Body, true
	switch {
	case !bt.retain:
		// The record is valid until the worker is done (Builder.Add).
	case rec.Chunk != nil:
		if n := len(bt.chunks); n == 0 || bt.chunks[n-1] != rec.Chunk {
			rec.Chunk.Retain()
			bt.chunks = append(bt.chunks, rec.Chunk)
		}
	case !rec.InPlace:
		// The record's bytes are reused: the worker gets a copy.
		j.body = bt.keep(rec.Body)
	}
}

// decode decodes a lazy job's sample (a worker's part of prepare).
func (w *worker) decode(j *job, bt *batch) error {
	if !j.lazy {
		return nil // decoded by prepare
	}
	s := &w.sample
	if err := perfdata.DecodeSample(j.attr, j.body, j.off, s); err != nil {
		return err
	}
	w.b.decoded(s, j, &w.regs, bt)
	return nil
}

// regsOf returns a job's user registers (decoded by decode or prepare).
func (w *worker) regsOf(j *job, bt *batch) *unwind.Registers {
	if j.eagerRegs > 0 {
		return &bt.regs[j.eagerRegs-1]
	}
	return &w.regs
}

// decoded fills in a job from its decoded sample: the kernel and user
// callchains, the user registers and stack.
func (b *Builder) decoded(s *perfdata.Sample, j *job, regs *unwind.Registers, bt *batch) {
	j.out.CPU, j.out.Period = s.CPU, s.Period
	cpuMode := j.misc & perfdata.MiscCPUModeMask
	// The callchain: kernel frames (innermost), then in frame-pointer
	// recordings the user frames; in dwarf recordings only the user ip.
	ctx := perfdata.ContextKernel
	if cpuMode == perfdata.MiscUser {
		ctx = perfdata.ContextUser
	}
	j.kernel.start = len(bt.ips)
	for _, ip := range s.Callchain {
		if ip >= perfdata.ContextMax {
			ctx = ip
			continue
		}
		if ctx == perfdata.ContextKernel {
			bt.ips = append(bt.ips, ip)
		}
	}
	if len(s.Callchain) == 0 && cpuMode == perfdata.MiscKernel && s.IP != 0 {
		bt.ips = append(bt.ips, s.IP)
	}
	j.kernel.end = len(bt.ips)
	j.user.start = len(bt.ips)
	ctx = perfdata.ContextKernel
	if cpuMode == perfdata.MiscUser {
		ctx = perfdata.ContextUser
	}
	for _, ip := range s.Callchain {
		if ip >= perfdata.ContextMax {
			ctx = ip
			continue
		}
		if ctx == perfdata.ContextUser {
			bt.ips = append(bt.ips, ip)
		}
	}
	j.user.end = len(bt.ips)
	haveRegs := userRegisters(s, regs)
	if haveRegs && !inModule(j.proc, regs.Values[16]) {
		// A user pc in no mapping: perf's dwarf unwinder gives up there
		// (a kernel sample during exec, before the new image is mapped;
		// JIT code). Only a user-mode sample shows it, as [unknown].
		haveRegs = false
		j.user.end = j.user.start
		bt.ips = bt.ips[:j.user.start]
		// perf shows it too where a JIT's perf map would name it.
		if cpuMode == perfdata.MiscUser || shownByPerf(j.maps, regs.Values[16]) {
			j.unknown, j.unknownPC = true, regs.Values[16]
		}
	}
	switch {
	case haveRegs:
		j.walk = true
		j.stack = s.Stack
	case j.user.end > j.user.start:
	case cpuMode == perfdata.MiscUser && s.IP != 0 && !j.unknown:
		bt.ips = append(bt.ips, s.IP)
		j.user.end = len(bt.ips)
	}
}

// inModule reports whether pc is in one of proc's files.
func inModule(proc *snapshot.Process, pc uint64) bool {
	if proc == nil {
		return false
	}
	um, _ := proc.LookupModule(pc)
	return um != nil
}

// worker turns jobs into stacks. Each goroutine has its own: its unwinders
// and its memo of names per address, so workers share nothing but the
// Builder's read-only options and the modules' own (concurrent) caches.
type worker struct {
	b       *Builder
	walkers map[*snapshot.Process]*walker
	// lastProc's walker, the one the previous sample used.
	lastProc   *snapshot.Process
	lastWalker *walker
	// names[file] memoizes the frames of the addresses of one file
	// (Builder.fileID), by nameKey.
	names  []map[uint64][]Frame
	files  []*fileNames // Builder.cachedNames by file
	modIDs map[*unwind.Module]uint32
	// Before the maps, the last module's number and a direct-mapped
	// cache of recent names: a profile's frames are mostly the same few
	// hundred addresses, and two map lookups per frame were ~5% of the
	// CPU of perf folded.
	lastMod *unwind.Module
	lastID  uint32
	recent  [recentNames]recentName
	job     *job             // the job being finished (its pid and maps name JIT code)
	sample  perfdata.Sample  // a lazy job's decoded sample (its buffers reused)
	regs    unwind.Registers // a lazy job's user registers (decode)
}

// recentNames is the size of a worker's direct-mapped names cache (a power of 2).
const recentNames = 1024

type recentName struct {
	id    uint32 // file number + 1 (0: empty)
	key   uint64
	names []Frame
}

// recentSlot is where (id, key) lives in the direct-mapped cache.
func recentSlot(id uint32, key uint64) int {
	h := (key ^ uint64(id)<<40) * 0x9e3779b97f4a7c15
	return int(h >> (64 - 10))
}

// nameKey identifies an address inside a file: the address minus the
// module's load bias, and whether it is a caller's (looked up at pc-1).
func nameKey(rel uint64, caller bool) uint64 {
	k := rel << 1
	if caller {
		k |= 1
	}
	return k
}

func newWorker(b *Builder) *worker {
	return &worker{b: b, walkers: map[*snapshot.Process]*walker{}, modIDs: map[*unwind.Module]uint32{}}
}

// run produces the stack of every job of a batch, into the batch's samples.
func (w *worker) run(bt *batch) {
	bt.samples = bt.samples[:0]
	bt.frames = bt.frames[:0]
	bt.ends = bt.ends[:0]
	for i := range bt.jobs {
		j := &bt.jobs[i]
		if i+1 < len(bt.jobs) && bt.jobs[i+1].lazy {
			perfdata.Prefetch(bt.jobs[i+1].body)
		}
		err := w.decode(j, bt)
		if err == nil {
			w.finish(j, bt)
		}
		j.stack, j.body = nil, nil
		if err != nil {
			// A malformed sample ends the recording there, as the
			// reader's own errors do: the samples before it go out.
			bt.jobs = bt.jobs[:i]
			bt.err = err
			break
		}
		bt.samples = append(bt.samples, j.out)
		bt.ends = append(bt.ends, len(bt.frames))
	}
	for i, c := range bt.chunks {
		c.Release()
		bt.chunks[i] = nil
	}
	bt.chunks = bt.chunks[:0]
	start := 0
	for i := range bt.samples {
		bt.samples[i].Frames = bt.frames[start:bt.ends[i]:bt.ends[i]]
		start = bt.ends[i]
	}
}

// finish appends one job's frames to the batch's frames; out.Stop says why
// the user walk ended early.
func (w *worker) finish(j *job, bt *batch) {
	w.job = j
	for _, ip := range bt.ips[j.kernel.start:j.kernel.end] {
		bt.frames = append(bt.frames, w.b.kernelFrame(ip))
	}
	if j.unknown {
		bt.frames = append(bt.frames, w.b.jitFrame(j.out.PID, j.maps, j.unknownPC, j.unknownPC))
	}
	switch {
	case j.walk:
		bt.frames = w.unwindUser(bt.frames, j, w.regsOf(j, bt))
	case j.user.end > j.user.start:
		bt.frames = w.chainUser(bt.frames, j.proc, bt.ips[j.user.start:j.user.end])
	}
}

// unwindUser walks the sampled stack copy from the user registers.
func (w *worker) unwindUser(dst []Frame, j *job, regs *unwind.Registers) []Frame {
	if j.proc == nil {
		return append(dst, Frame{PC: regs.Values[16]})
	}
	wk := w.walker(j.proc)
	wk.mem.reset(j.stack, regs.Values[7], j.maps)
	wk.jit = jitCode{w.b, j.out.PID, j.maps}
	u := wk.u
	if u.InitRegisters(regs) != nil {
		return dst
	}
	for depth := 0; ; depth++ {
		if depth < w.b.opts.MaxFrames {
			f := u.Frame()
			if strayCaller(depth, f, j.maps) {
				j.out.Stop = "caller outside the mappings"
				return dst
			}
			dst = w.appendNames(dst, j.proc, f.Module, f.PC, f.LookupPC())
		}
		if rest := u.ReplayRest(); rest != nil {
			// The outer frames are the previous walk's.
			// The stray-caller check applies to them as to stepped frames.
			for i := range rest {
				if depth++; depth < w.b.opts.MaxFrames {
					f := &rest[i]
					if strayCaller(depth, f, j.maps) {
						j.out.Stop = "caller outside the mappings"
						return dst
					}
					dst = w.appendNames(dst, j.proc, f.Module, f.PC, f.LookupPC())
				}
			}
			break
		}
		if !u.Step() {
			break
		}
	}
	if stop := u.StopReason(); stop != unwind.StopOutermost && stop != unwind.StopDepthLimit {
		j.out.Stop = stop.String()
		if stop == unwind.StopMemoryUnreadable && stackCopyFull(j) {
			j.out.Stop = StopStackCopy
		}
	}
	return dst
}

// StopStackCopy is a Sample's Stop when its walk needed the stack beyond
// the sample's copy: the copy was as large as the recording asked for, and
// a larger one (perf's --call-graph dwarf,SIZE, sonde profile's
// --stack-size) would have gone further.
const StopStackCopy = "stack copy too small"

// stackCopyFull reports whether the kernel copied all the stack the
// recording asked for (or nearly 64 KiB, where it clips the copy to fit the
// record): a walk that then runs out of readable stack ran off its end.
func stackCopyFull(j *job) bool {
	n := uint64(len(j.stack))
	return j.attr != nil && n > 0 && (n >= uint64(j.attr.SampleStackUser) || n >= 60<<10)
}

// chainUser names the user frames of a frame-pointer callchain: the first
// is the sampled pc, the rest return addresses.
func (w *worker) chainUser(dst []Frame, proc *snapshot.Process, ips []uint64) []Frame {
	for i, ip := range ips {
		if i >= w.b.opts.MaxFrames {
			break
		}
		lookup := ip
		if i > 0 && ip > 0 {
			lookup = ip - 1
		}
		var um *unwind.Module
		if proc != nil {
			um, _ = proc.LookupModule(ip)
		}
		n := len(dst)
		dst = w.appendNames(dst, proc, um, ip, lookup)
		if lookup != ip {
			// perf prints a frame-pointer chain's return address's
			// offset (named by the function holding the call).
			for k := n; k < len(dst); k++ {
				dst[k].Offset++
			}
		}
	}
	return dst
}

// appendNames appends the frames one physical frame stands for: its inline
// chain (or one ELF-symbol frame with NoInline), named once per file address.
func (w *worker) appendNames(dst []Frame, proc *snapshot.Process, um *unwind.Module, pc, lookup uint64) []Frame {
	if um == nil {
		return append(dst, w.b.jitFrame(w.job.out.PID, w.job.maps, pc, lookup))
	}
	var id uint32
	if um == w.lastMod {
		id = w.lastID
	} else {
		var ok bool
		id, ok = w.modIDs[um]
		if !ok {
			if len(w.modIDs) > maxWalkers*64 {
				clear(w.modIDs)
			}
			id = w.b.fileID(um.Name)
			w.modIDs[um] = id
		}
		w.lastMod, w.lastID = um, id
	}
	rel := lookup - um.Bias
	var slot *recentName
	if rel < 1<<63 {
		key := nameKey(rel, pc != lookup)
		slot = &w.recent[recentSlot(id, key)]
		if slot.id == id+1 && slot.key == key {
			return appendAt(dst, slot.names, pc)
		}
	}
	for int(id) >= len(w.names) {
		w.names = append(w.names, map[uint64][]Frame{})
	}
	memo := w.names[id]
	var key uint64
	if rel < 1<<63 {
		key = nameKey(rel, pc != lookup)
	} else {
		memo = nil // an address no key holds: looked up every time
	}
	names, ok := memo[key]
	if !ok {
		// Not met by this worker yet: the persisted cache may know it.
		for int(id) >= len(w.files) {
			w.files = append(w.files, nil)
		}
		fn := w.files[id]
		if fn == nil {
			fn = w.b.cachedNames(id, proc, um)
			w.files[id] = fn
		}
		if names, ok = fn.lookup(key); !ok || memo == nil {
			names = w.b.lookupNames(proc, um, lookup)
			if memo != nil {
				fn.add(key, names)
			}
		}
		if memo != nil {
			memo[key] = names
		}
	}
	if slot != nil {
		*slot = recentName{id: id + 1, key: key, names: names}
	}
	return appendAt(dst, names, pc)
}

// appendAt appends the frames of names, at pc: copied in one move (one
// bulk write barrier for their strings, where an append per frame paid
// one per string; 9% of a large recording's CPU), then placed at pc.
func appendAt(dst, names []Frame, pc uint64) []Frame {
	n := len(dst)
	dst = append(dst, names...)
	for i := n; i < len(dst); i++ {
		dst[i].PC = pc
	}
	return dst
}

func (b *Builder) lookupNames(proc *snapshot.Process, um *unwind.Module, lookup uint64) []Frame {
	base := Frame{Module: um.Name}
	if proc == nil {
		return []Frame{base}
	}
	// The offset perf prints (func+0x12) is from the start of the ELF
	// symbol that holds the address, for inline frames too.
	if b.opts.NoInline {
		bin := proc.Binary(um)
		if bin == nil {
			return []Frame{base}
		}
		if t, err := bin.Symbols(); err == nil {
			if sym, off, ok := t.Lookup(lookup - um.Bias); ok {
				base.Function = demangled(perfChoice(sym, t.Aliases(sym.Addr)).Name)
				base.Offset, base.HasOffset = off, true
			}
		}
		return []Frame{base}
	}
	syms, _ := proc.SymbolInfo(um, lookup)
	if len(syms) == 0 {
		return []Frame{base}
	}
	// The outermost function of the chain is the one the ELF symbol names.
	if start := syms[len(syms)-1].FuncStart; start != 0 && start <= lookup {
		base.Offset, base.HasOffset = lookup-start, true
	}
	out := make([]Frame, len(syms))
	for i, s := range syms {
		out[i] = Frame{Function: s.Function, File: s.File, Line: s.Line, Column: s.Column, StartLine: s.DeclLine,
			Module: um.Name, Inlined: i < len(syms)-1, Offset: base.Offset, HasOffset: base.HasOffset}
	}
	return out
}

// perfChoice picks among the symbols at one address the one perf names.
// perf keeps one symbol per start address (tools/perf/util/symbol.c,
// symbols__fixup_duplicate): walking its symbols in address order, table
// order within an address, it keeps of each pair the one choose_best_symbol
// prefers, the earlier on a tie. Its rules: sized over zero-size, strong
// over weak, global over local, fewer leading underscores, the longer name
// (as written in the table: "__libc_start_main@@GLIBC_2.34"). So libc's
// recv, whose aliases __libc_recv and __GI___recv are both local with two
// underscores and eleven letters, is __libc_recv: the earlier entry.
//
// perf sizes zero-size symbols (symbols__fixup_end) before it chooses: one
// ends where the next symbol of its table begins, so a zero-size alias
// listed after every other one at its address counts as sized; and it
// compares names as it stores them, demangled without parameters. So
// libclang-cpp's SubstDecl (296 bytes, entry 4972) and its label alias
// TemplateDeclInstantiator::VisitDecl (0 bytes, entry 19113) are VisitDecl:
// the longer demangled name.
func perfChoice(sym elfsym.Symbol, aliases []elfsym.Symbol) elfsym.Symbol {
	last := sym
	for _, a := range aliases {
		if a.Origin < last.Origin || a.Origin == last.Origin && a.Index > last.Index {
			last = a
		}
	}
	sized := func(s elfsym.Symbol) bool { return s.Size > 0 || s.Origin == last.Origin && s.Index == last.Index }
	best := sym
	for _, a := range aliases {
		if perfPrefers(a, best, sized) {
			best = a
		}
	}
	return best
}

// perfPrefers says whether perf keeps a rather than b (both at one address).
func perfPrefers(a, b elfsym.Symbol, sized func(elfsym.Symbol) bool) bool {
	if sized(a) != sized(b) {
		return sized(a)
	}
	if aw, bw := a.Bind == elf.STB_WEAK, b.Bind == elf.STB_WEAK; aw != bw {
		return bw
	}
	if ag, bg := a.Bind == elf.STB_GLOBAL, b.Bind == elf.STB_GLOBAL; ag != bg {
		return ag
	}
	if au, bu := leadingUnderscores(a.Name), leadingUnderscores(b.Name); au != bu {
		return au < bu
	}
	if al, bl := tableNameLen(a), tableNameLen(b); al != bl {
		return al > bl
	}
	// perf reads one table: the debug file's .symtab when there is one.
	if a.Origin != b.Origin {
		return a.Origin < b.Origin
	}
	return a.Index < b.Index
}

// tableNameLen is the length of the symbol's name as perf stores it:
// demangled without parameters, with the version its table writes
// ("name@@VERSION"; elfsym splits it off).
func tableNameLen(s elfsym.Symbol) int {
	n := len(demangled(s.Name))
	if s.VersionSep > 0 {
		return n + int(s.VersionSep) + len(s.Version)
	}
	return n
}

func leadingUnderscores(s string) int {
	n := 0
	for n < len(s) && s[n] == '_' {
		n++
	}
	return n
}

// demangled is a C++ or Rust name as perf prints it: without the
// parameters and return type (perf demangles with them only in verbose mode).
func demangled(name string) string { return elfsym.DemangledNoParams(name) }
