package core

import (
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/memimage"
	"github.com/sondedbg/sonde/target"
)

// Options say where to find the files the process had mapped.
type Options struct {
	// Executable is the program's executable, when it is not (or no longer)
	// at the path the core records. It is checked like any other candidate.
	Executable string
	// Sysroot is prefixed to every path the core records (a copy of the
	// crashed machine's file system); "" looks at the paths themselves.
	Sysroot string
	// SearchPath lists directories searched for a mapped file's base name
	// when it is not at its recorded path.
	SearchPath []string
	// FindByBuildID, when set, returns the path of a file with the given GNU
	// build-id, or "" (the symbols layer provides it: debuginfod, a build-id
	// directory). It is asked last, and only for files whose build-id the
	// core holds.
	FindByBuildID func(buildID []byte) (path string)
	// Cache, when set, shares mapped files with other images; by default each
	// core gets a cache of its own without a byte limit.
	Cache *memimage.SectionCache
}

// Thread is one thread of the dumped process: its notes, decoded.
type Thread struct {
	TID    int
	Status *PRStatus
	// FPRegs is the NT_FPREGSET note (the 512-byte FXSAVE image), nil if absent.
	FPRegs []byte
	// XState is the NT_X86_XSTATE note (the XSAVE area), nil if absent.
	XState []byte
	// SigInfo is the NT_SIGINFO that followed this thread's NT_PRSTATUS: the
	// signal it was handling when the dump was made. nil if none.
	SigInfo *SigInfo
	// Context is the thread's context in the Target.
	Context *target.Context
}

// Registers returns a copy of the thread's registers: NT_PRSTATUS's pr_reg and
// the XSAVE area (or the FXSAVE image when the core has no NT_X86_XSTATE). The
// XSAVE area is in the layout of the CPU that wrote the core, which is
// inferred from the image and converted to arch's.
func (th *Thread) Registers() *target.Registers {
	r := &target.Registers{Arch: arch.AMD64, General: th.Status.Registers}
	switch {
	case len(th.XState) >= arch.FXSaveSize:
		r.XState = arch.InferXStateLayout(th.XState).ToArch(th.XState)
	case len(th.FPRegs) >= arch.FXSaveSize:
		r.XState = th.FPRegs[:arch.FXSaveSize]
	}
	return r.Clone()
}

// Core is an opened core file: the Backend behind a core Target, and the
// core-specific facts (auxiliary vector, mapped files, problems) that the
// target model has no words for.
type Core struct {
	path     string
	opts     Options
	size     uint64
	segments []Segment

	target  *target.Target
	process *target.Context
	pid     int
	psinfo  *PRPSInfo
	auxv    Auxv
	threads []*Thread
	byTID   map[int]*Thread

	layout   *layout
	files    []*MappedFile          // one per distinct path, in NT_FILE order
	byPath   map[string]*MappedFile // by the path NT_FILE records
	exe      *MappedFile            // the mapped file holding AT_ENTRY
	regions  []target.MemoryRegion
	gaps     []*MissingError // sorted by Start
	mem      *coreMemory     // the core file, mapped
	image    *memimage.Image
	cache    *memimage.SectionCache // where the image's file sections live
	ownCache *memimage.SectionCache // the cache Open made, released by Close
	pend     filePiece              // while building the image: the file range being extended
	// fileRanges lists every range a section serves, sorted by address;
	// the first maxImageSections are in the image too.
	fileRanges []fileRange
	problems   []Problem
	closed     atomic.Bool
	// fileMu serializes looking for mapped files and adding their problems
	// after ensureFiles (LocateFile, MappedFiles, Problems).
	fileMu sync.Mutex

	notesTruncated bool // a PT_NOTE segment runs past the end of the file

	// The mapped files are looked for on first need (a memory read, the map,
	// the problems), not at Open: opening a core and reading its registers
	// touches nothing but the core's headers and notes.
	filesOnce    sync.Once
	allFilesOnce sync.Once // MappedFiles looks for the files no read needed
	coreTime     int64     // the core's mtime, in ns
}

// asid is the address space of the core's one process in its image.
var asid = memimage.AnyASID

// maxNoteBytes bounds the note bytes read: 10,000 threads with AVX-512 state
// take about 35 MiB, an NT_FILE for 65,530 mappings about 10 MiB.
const maxNoteBytes = 256 << 20

// Open opens the core file at path and returns a read-only Target with the
// dumped process and its threads, all stopped. Damage that leaves the notes
// readable is not an error: the Target serves what is there and Of(t).Problems
// says what is not. Open fails (with a *FormatError, a *NoteError or an
// *os.PathError) only when there is no process to show: not an x86-64 ELF
// core, unreadable program headers, or no NT_PRSTATUS and NT_PRPSINFO (a
// gcore cut anywhere before its end loses them: gdb writes the notes last).
func Open(path string, opts Options) (*target.Target, error) {
	c, err := open(path, opts)
	if err != nil {
		return nil, err
	}
	return c.target, nil
}

// Of returns the Core behind a Target opened with Open, or nil for any other
// Target.
func Of(t *target.Target) *Core {
	c, _ := t.Backend().(*Core)
	return c
}

func open(path string, opts Options) (*Core, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	c := &Core{path: path, opts: opts, size: uint64(st.Size()), byTID: map[int]*Thread{}}
	h, err := readELFHeader(f)
	if err != nil {
		return nil, err
	}
	if h.Type != etCore {
		return nil, &FormatError{16, fmt.Sprintf("ELF type %d is not ET_CORE (4)", h.Type), nil}
	}
	if c.segments, err = readProgramHeaders(f, h, c.size); err != nil {
		return nil, err
	}
	files, err := c.readNotes(f)
	if err != nil {
		return nil, err
	}
	c.layout = newLayout(c.segments, files, c.size, &c.problems)
	if c.mem, err = mapCore(f, c.size); err != nil {
		return nil, err
	}
	c.coreTime = st.ModTime().UnixNano()
	c.newImage()
	c.makeTarget()
	return c, nil
}

// readNotes reads every PT_NOTE segment and decodes the notes sonde uses.
// Notes are read with pread, not through a mapping, so a core that shrinks
// while being opened yields an error rather than a SIGBUS.
func (c *Core) readNotes(f io.ReaderAt) ([]FileMapping, error) {
	var all []Note
	var total uint64
	for _, s := range c.segments {
		if s.Type != ptNote || s.FileSize == 0 {
			continue
		}
		n := s.FileSize
		if s.Offset >= c.size {
			n = 0
		} else if avail := c.size - s.Offset; n > avail {
			n = avail
		}
		if n < s.FileSize {
			c.notesTruncated = true
			c.problems = append(c.problems, Problem{Kind: ProblemTruncated, Offset: int64(min(s.Offset+n, 1<<63-1)),
				Err: fmt.Errorf("PT_NOTE segment at file offset %d truncated: the core has %d of its %d bytes", s.Offset, n, s.FileSize)})
		}
		if total+n > maxNoteBytes {
			return nil, &NoteError{Offset: int64(s.Offset), Msg: fmt.Sprintf("more than %d bytes of notes", maxNoteBytes)}
		}
		total += n
		buf := make([]byte, n)
		if got, err := f.ReadAt(buf, int64(s.Offset)); got < len(buf) {
			c.problems = append(c.problems, Problem{Kind: ProblemTruncated, Offset: int64(s.Offset) + int64(got),
				Err: fmt.Errorf("reading notes: %w", errOr(err, io.ErrUnexpectedEOF))})
			buf = buf[:got]
		}
		notes, err := ParseNotes(buf, int64(s.Offset), s.Align)
		if err != nil {
			c.problems = append(c.problems, noteProblem(err, 0))
		}
		all = append(all, notes...)
	}
	return c.decodeNotes(all)
}

// noteProblem turns a parser error into a Problem, setting the note's offset.
func noteProblem(err error, offset int64) Problem {
	if ne, ok := err.(*NoteError); ok && ne.Offset == 0 {
		ne.Offset = offset
	}
	return Problem{Kind: ProblemBadNote, Offset: offset, Err: err}
}

// decodeNotes interprets the notes in file order: the per-thread notes
// (NT_FPREGSET, NT_X86_XSTATE, NT_SIGINFO) belong to the NT_PRSTATUS before
// them, which is how both the kernel and gdb write them.
func (c *Core) decodeNotes(notes []Note) ([]FileMapping, error) {
	var files []FileMapping
	var cur *Thread // the thread whose notes are being read; nil after a bad NT_PRSTATUS
	var orphanSig *SigInfo
	haveFile, haveAuxv := false, false
	for _, n := range notes {
		switch {
		case n.Type == NT_PRSTATUS && n.Name == "CORE":
			cur = nil
			s, err := ParsePRStatus(n.Desc)
			if err != nil {
				c.problems = append(c.problems, noteProblem(err, n.Offset))
				continue
			}
			if _, dup := c.byTID[int(s.TID)]; dup || s.TID <= 0 {
				c.problems = append(c.problems, Problem{Kind: ProblemBadNote, Offset: n.Offset,
					Err: &NoteError{Type: NT_PRSTATUS, Offset: n.Offset, Msg: fmt.Sprintf("thread id %d is invalid or repeated; ignored", s.TID)}})
				continue
			}
			cur = &Thread{TID: int(s.TID), Status: s}
			c.threads = append(c.threads, cur)
			c.byTID[cur.TID] = cur
		case n.Type == NT_FPREGSET && n.Name == "CORE":
			if cur != nil {
				if len(n.Desc) < arch.FXSaveSize {
					c.problems = append(c.problems, noteProblem(&NoteError{Type: NT_FPREGSET, Offset: n.Offset,
						Msg: fmt.Sprintf("descriptor has %d bytes, the FXSAVE image needs %d", len(n.Desc), arch.FXSaveSize)}, n.Offset))
					continue
				}
				cur.FPRegs = append([]byte(nil), n.Desc...)
			}
		case n.Type == NT_X86_XSTATE && n.Name == "LINUX":
			if cur != nil {
				if len(n.Desc) < arch.FXSaveSize+64 {
					c.problems = append(c.problems, noteProblem(&NoteError{Type: NT_X86_XSTATE, Offset: n.Offset,
						Msg: fmt.Sprintf("descriptor has %d bytes, an XSAVE area needs at least %d", len(n.Desc), arch.FXSaveSize+64)}, n.Offset))
					continue
				}
				cur.XState = append([]byte(nil), n.Desc...)
			}
		case n.Type == NT_SIGINFO && n.Name == "CORE":
			s, err := ParseSigInfo(n.Desc)
			if err != nil {
				c.problems = append(c.problems, noteProblem(err, n.Offset))
				continue
			}
			if cur != nil {
				cur.SigInfo = s
			} else {
				orphanSig = s
			}
		case n.Type == NT_PRPSINFO && n.Name == "CORE":
			p, err := ParsePRPSInfo(n.Desc)
			if err != nil {
				c.problems = append(c.problems, noteProblem(err, n.Offset))
				continue
			}
			c.psinfo = p
		case n.Type == NT_AUXV && n.Name == "CORE":
			a, err := ParseAuxv(n.Desc)
			if err != nil {
				c.problems = append(c.problems, noteProblem(err, n.Offset))
			}
			c.auxv, haveAuxv = a, true
		case n.Type == NT_FILE && n.Name == "CORE":
			fm, err := ParseFileNote(n.Desc)
			if err != nil {
				c.problems = append(c.problems, noteProblem(err, n.Offset))
			}
			files, haveFile = fm, true
		}
	}
	if orphanSig != nil && len(c.threads) > 0 && c.threads[0].SigInfo == nil {
		c.threads[0].SigInfo = orphanSig
	}
	switch {
	case c.psinfo != nil && c.psinfo.PID > 0:
		c.pid = int(c.psinfo.PID)
	case len(c.threads) > 0:
		// The main thread's id is the pid, and it is the oldest thread; ids
		// grow, so the smallest is the best guess.
		c.pid = c.threads[0].TID
		for _, th := range c.threads {
			c.pid = min(c.pid, th.TID)
		}
		c.problems = append(c.problems, Problem{Kind: ProblemMissingInfo, Offset: -1,
			Err: fmt.Errorf("no usable NT_PRPSINFO: the process id %d is the smallest thread id, and the process has no name", c.pid)})
	default:
		msg := "the core has neither an NT_PRSTATUS nor an NT_PRPSINFO note: there is no process to show"
		if c.notesTruncated {
			msg += " (the file is truncated before the end of its notes)"
		}
		return nil, &NoteError{Msg: msg}
	}
	if !haveFile {
		c.problems = append(c.problems, Problem{Kind: ProblemMissingInfo, Offset: -1,
			Err: fmt.Errorf("no NT_FILE note: mapped files are unknown, so bytes the core left out cannot be read from them")})
	}
	if !haveAuxv {
		c.problems = append(c.problems, Problem{Kind: ProblemMissingInfo, Offset: -1, Err: fmt.Errorf("no NT_AUXV note")})
	}
	if len(c.threads) == 0 {
		c.problems = append(c.problems, Problem{Kind: ProblemMissingInfo, Offset: -1, Err: fmt.Errorf("no usable NT_PRSTATUS: the process has no threads")})
	}
	return files, nil
}

// makeTarget creates the Target, the process and its stopped threads.
func (c *Core) makeTarget() {
	c.target = target.New(c)
	name := ""
	if c.psinfo != nil {
		name = c.psinfo.Name
	}
	c.process = c.target.AddProcess(c.pid, nil, name)
	anySig := false
	for _, th := range c.threads {
		anySig = anySig || (th.SigInfo != nil && th.SigInfo.Signal != 0)
	}
	for i, th := range c.threads {
		th.Context = c.target.AddThread(c.process, th.TID, nil, "")
		c.target.SetPending(th.Context, target.SignalSet(th.Status.Pending))
		c.target.Stopped(th.Context, th.reason(i == 0 && !anySig), th.Registers().PC())
	}
}

// reason says why a thread is stopped. useCurSig lets the first thread fall
// back to pr_cursig when no thread has an NT_SIGINFO (old kernels).
func (th *Thread) reason(useCurSig bool) *target.SuspendReason {
	si := th.SigInfo
	switch {
	case si != nil && si.Signal != 0:
		sig := target.Signal(si.Signal)
		info := &target.SigInfo{Code: si.Code, Addr: si.Addr, HasAddr: si.IsFault()}
		if si.IsFault() {
			// As a live fault stop says it ("segmentation fault: address
			// not mapped at 0x0"; it said "SIGSEGV (segmentation fault) at
			// address 0x0, si_code 1", and DAP's stop then "SIGSEGV:
			// SIGSEGV (...)").
			msg := sig.Description() + ": " + target.FaultText(sig, si.Code, si.Addr)
			if target.FaultText(sig, si.Code, si.Addr) == "" {
				msg = fmt.Sprintf("%s at 0x%x, si_code %d", sig.Description(), si.Addr, si.Code)
			}
			return &target.SuspendReason{Kind: target.ReasonException, Signal: sig, SigInfo: info, Message: msg}
		}
		if sig == sigSTOP {
			// gdb's gcore of a process it attached to: the debugger stopped it.
			return &target.SuspendReason{Kind: target.ReasonUser, Signal: sig, SigInfo: info}
		}
		r := &target.SuspendReason{Kind: target.ReasonSignal, Signal: sig, SigInfo: info}
		if si.SenderPID != 0 || si.Code <= 0 {
			r.Message = fmt.Sprintf("%s sent by pid %d (si_code %d)", sig.Name(), si.SenderPID, si.Code)
		}
		return r
	case useCurSig && th.Status.CurrentSignal != 0:
		return &target.SuspendReason{Kind: target.ReasonSignal, Signal: target.Signal(th.Status.CurrentSignal)}
	}
	return &target.SuspendReason{Kind: target.ReasonContainer}
}

const sigSTOP = 19

// Path returns the core file's path.
func (c *Core) Path() string { return c.path }

// PID returns the dumped process's id.
func (c *Core) PID() int { return c.pid }

// Process returns the process context.
func (c *Core) Process() *target.Context { return c.process }

// PSInfo returns the NT_PRPSINFO note, or nil if the core has none.
func (c *Core) PSInfo() *PRPSInfo { return c.psinfo }

// Auxv returns the auxiliary vector (nil if the core has no NT_AUXV). Use
// Lookup(AT_SYSINFO_EHDR) for the vDSO, AT_ENTRY and AT_PHDR for the
// executable's load bias.
func (c *Core) Auxv() Auxv { return c.auxv }

// Threads returns the threads in note order (for kernel cores, the thread that
// took the fatal signal first).
func (c *Core) Threads() []*Thread { return append([]*Thread(nil), c.threads...) }

// Thread returns the thread with the given id, or nil.
func (c *Core) Thread(tid int) *Thread { return c.byTID[tid] }

// Segments returns the core's program headers.
func (c *Core) Segments() []Segment { return append([]Segment(nil), c.segments...) }

// FileMappings returns the NT_FILE note's entries.
func (c *Core) FileMappings() []FileMapping { return append([]FileMapping(nil), c.layout.files...) }

// MappedFiles returns every file the process had mapped and what stands in
// for it, looking for the files no memory read needed too.
func (c *Core) MappedFiles() []*MappedFile {
	c.ensureFiles()
	c.fileMu.Lock()
	defer c.fileMu.Unlock()
	c.allFilesOnce.Do(func() {
		for _, mf := range c.files {
			c.resolveFile(mf)
		}
	})
	return append([]*MappedFile(nil), c.files...)
}

// Executable returns the mapped file that holds the entry point (AT_ENTRY),
// or nil when the core does not say.
func (c *Core) Executable() *MappedFile {
	c.ensureFiles()
	return c.exe
}

// Image returns the memory image: the core's bytes over the mapped files. Its
// fallback answers every other address with a *MissingError. Reads of it are
// what ReadMemory returns, without the conversion to *target.MemoryError.
func (c *Core) Image() *memimage.Image {
	c.ensureFiles()
	return c.image
}

// ASID is the address space of the process in Image.
func (c *Core) ASID() memimage.ASID { return asid }

// Problems lists everything the core could not provide, most structural first
// (bad notes, bad and truncated segments, missing and changed files), then each
// range of addresses whose bytes are unavailable.
func (c *Core) Problems() []Problem {
	c.ensureFiles()
	c.fileMu.Lock()
	out := append([]Problem(nil), c.problems...)
	c.fileMu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}
