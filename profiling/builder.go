package profiling

import (
	"sort"
	"sync"

	"github.com/sondedbg/sonde/perfdata"
	"github.com/sondedbg/sonde/symbols"
	"github.com/sondedbg/sonde/unwind/snapshot"
)

// Options configure a Builder.
type Options struct {
	// NoInline names each physical frame by the ELF symbol containing its
	// pc, as perf does with --no-inline, instead of one frame per function
	// of its inline chain.
	NoInline bool
	// Symbols tells where debug files are found (nil: as `sonde stack` does).
	Symbols *symbols.Options
	// Kernel names kernel frames; nil leaves them as addresses.
	Kernel *KernelSymbols
	// MaxFrames bounds one sample's user frames (0: 512).
	MaxFrames int
}

// Frame is one frame of a sample's stack.
type Frame struct {
	PC       uint64 // runtime address (the return address for callers)
	Function string // "" when unknown
	File     string
	Line     int
	Column   int
	// StartLine is where Function's definition starts in File's
	// source (DWARF's DW_AT_decl_line), 0 when unknown.
	StartLine int
	Module    string // the file's path, "[kernel.kallsyms]", "[vdso]"; "" for no file
	Inlined   bool   // a function inlined into the next frame
	Kernel    bool
	// Offset is the lookup address's distance from the start of the ELF
	// (or kallsyms) symbol holding it, as perf prints it (func+0x12);
	// HasOffset is false when no symbol holds it.
	Offset    uint64
	HasOffset bool
}

// Sample is one sample with its stack, innermost frame first.
type Sample struct {
	Comm     string
	PID, TID uint32
	Time     uint64
	CPU      uint32
	Period   uint64
	// Event is the sampled event's name as perf prints it ("cpu-clock:ppp").
	Event string
	// HasCPU says the recording has the CPU of each sample (system-wide).
	HasCPU bool
	Frames []Frame
	// Stop says why the user walk ended early ("" when it reached the
	// outermost frame or the sample had no user part).
	Stop string
	// Maps is the process's address space when sampled, sorted by Start
	// (shared with later samples: read only). pprof's mappings are its
	// ranges: pprof opens a file at the address its mapping says.
	Maps []snapshot.Mapping
}

// Builder follows a recording's records and hands out each sample's stack.
// Not safe for concurrent use.
type Builder struct {
	opts    Options
	objects *snapshot.Objects
	spaces  map[uint32]*space
	// seq and one are Add's worker and batch (Recording.Each has its own).
	seq *worker
	one batch
	// kernelSyms, when set, finds the kernel's symbols on first use
	// (OpenRecording loads them while the first records are read).
	kernelSyms func() *KernelSymbols
	// fileIDs numbers the module names the workers' memos see.
	fileMu  sync.Mutex
	fileIDs map[string]uint32
	// persisted[fileID] is what the persisted cache knows of the file's names.
	persisted []*fileNames
	// Lost counts samples the kernel dropped (LOST and LOST_SAMPLES records).
	Lost uint64
	lost lostCounts
	// files maps a recorded path to the file to read for it: perf's
	// build-id cache copy when the file changed since, "" when no copy
	// matches (its frames stay unnamed rather than misnamed).
	files map[string]string
	// vdso is the recording's vDSO image, when it could be found.
	vdso []byte
	jit  jitMaps
	// comms names the threads whose name differs from their process's
	// (pthread_setname_np, a worker pool), by tid.
	comms map[uint32]threadName
}

// space is one process's address space as the recording shows it.
type space struct {
	comm  string
	maps  []snapshot.Mapping // sorted by Start, disjoint
	proc  *snapshot.Process  // nil when maps changed since it was built
	th    *snapshot.Thread
	owned bool // proc was built for this space (a forked child shares its parent's until it changes)
}

// NewBuilder makes a Builder. Close releases the files it opened.
func NewBuilder(opts Options) *Builder {
	if opts.MaxFrames <= 0 {
		opts.MaxFrames = 512
	}
	b := &Builder{opts: opts, objects: snapshot.NewObjects(), spaces: map[uint32]*space{}, fileIDs: map[string]uint32{}}
	b.seq = newWorker(b)
	return b
}

// fileID numbers a module's name for the workers' memos (a number hashes
// faster than a path).
func (b *Builder) fileID(name string) uint32 {
	b.fileMu.Lock()
	defer b.fileMu.Unlock()
	id, ok := b.fileIDs[name]
	if !ok {
		id = uint32(len(b.fileIDs))
		b.fileIDs[name] = id
	}
	return id
}

// Close keeps the names the Builder found in the persisted cache and
// releases the files it opened.
func (b *Builder) Close() error {
	b.storeNames()
	b.closeNames()
	return b.objects.Close()
}

func (b *Builder) space(pid uint32) *space {
	s := b.spaces[pid]
	if s == nil {
		s = &space{}
		b.spaces[pid] = s
	}
	return s
}

// Add takes one record (in time order: see perfdata.Sorter). For a sample it
// returns the sample with its stack, valid until the next call; for other
// records nil.
func (b *Builder) Add(rec *perfdata.Record) *Sample {
	switch rec.Type {
	case perfdata.RecordMmap, perfdata.RecordMmap2:
		m := &rec.Mmap
		if m.PID == ^uint32(0) { // the kernel's own maps
			return nil
		}
		b.space(m.PID).mmap(m, b)
	case perfdata.RecordComm:
		s := b.space(rec.Comm.PID)
		if rec.Comm.Exec {
			s.reset()
			b.dropThreadComms(rec.Comm.PID)
		}
		b.setThreadComm(rec.Comm.PID, rec.Comm.TID, rec.Comm.Name)
		if rec.Comm.PID == rec.Comm.TID || s.comm == "" || rec.Comm.Exec {
			s.comm = rec.Comm.Name
		}
	case perfdata.RecordFork:
		t := rec.Task
		b.forkThreadComm(t)
		if t.PID != t.PPID {
			parent := b.space(t.PPID)
			child := &space{comm: parent.comm, maps: append([]snapshot.Mapping(nil), parent.maps...), proc: parent.proc}
			b.spaces[t.PID] = child
		}
	case perfdata.RecordExit:
		// The process's space and names stay: samples of its last
		// moment in the kernel may follow its EXIT record, and perf
		// names them. A FORK reusing the pid replaces them.
	case perfdata.RecordLost, perfdata.RecordLostSamples:
		b.lost.count(rec, &b.Lost)
	case perfdata.RecordSample:
		bt := &b.one
		bt.reset()
		b.prepare(rec, bt)
		b.seq.run(bt)
		return &bt.samples[0]
	}
	return nil
}

// mmap adds a mapping: newer mappings replace what they cover of older ones.
func (s *space) mmap(m *perfdata.Mmap, b *Builder) {
	if m.Len == 0 || m.Addr+m.Len < m.Addr {
		return
	}
	nm := snapshot.Mapping{Start: m.Addr, End: m.Addr + m.Len, Offset: m.PgOff, Path: m.Filename, Name: m.Filename, Exec: m.Exec}
	switch {
	case m.Filename == "[vdso]":
		nm.Path, nm.Data = "", b.vdso
	case !isFilePath(m.Filename):
		nm.Path = "" // anonymous memory, [stack], [heap], //anon: no file to read
	default:
		if alt, ok := b.files[m.Filename]; ok {
			nm.Path = alt
		}
	}
	var out []snapshot.Mapping
	for _, old := range s.maps {
		if old.End <= nm.Start || old.Start >= nm.End {
			out = append(out, old)
			continue
		}
		if old.Start < nm.Start {
			left := old
			left.End = nm.Start
			out = append(out, left)
		}
		if old.End > nm.End {
			right := old
			right.Offset += nm.End - old.Start
			right.Start = nm.End
			out = append(out, right)
		}
	}
	out = append(out, nm)
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	s.maps = out
	s.proc, s.th, s.owned = nil, nil, false
}

func isFilePath(name string) bool {
	return len(name) > 0 && name[0] == '/' && !hasPrefix(name, "//anon")
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// reset forgets the address space (exec).
func (s *space) reset() {
	s.maps = nil
	s.proc, s.th, s.owned = nil, nil, false
}

// process returns the space's snapshot process, building it when the
// mappings changed.
func (b *Builder) process(s *space) *snapshot.Process {
	if s.proc == nil {
		p, err := snapshot.New(s.maps, &snapshot.Options{Objects: b.objects, Symbols: b.opts.Symbols})
		if err != nil {
			return nil
		}
		s.proc, s.owned = p, true
	}
	return s.proc
}
