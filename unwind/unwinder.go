package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sondedbg/sonde/dwarfexpr"
)

// Options tune a walk. The zero value is the default.
type Options struct {
	// MaxDepth bounds the number of physical frames (default 4096).
	MaxDepth int
	// NoFramePointer disables the frame-pointer fallback (frames without CFI
	// then end the walk with StopNoUnwindInfo).
	NoFramePointer bool
	// ReuseFrames makes the Unwinder keep a record of its last complete walk
	// and replay the frames the next walk has in common with it, once it
	// has read again every byte of memory those frames were unwound from
	// and found it unchanged (see memo.go): for an Unwinder that walks one
	// thread at each of its stops. The client must call Forget when what
	// LookupModule answers changes (a library loaded or unloaded).
	ReuseFrames bool
}

const defaultMaxDepth = 4096

// Unwinder walks one stack, frame by frame (uwx_init_context / uwx_step /
// uwx_get_reg). It is reusable — Init starts a new walk and keeps the buffers —
// but not safe for concurrent use; use one Unwinder per goroutine. Module caches
// are shared by all Unwinders through the *Module values.
type Unwinder struct {
	mem    CopyIn
	lookup LookupIP
	opts   Options

	frame Frame // the current frame
	next  Frame // its caller, when hasNext
	depth int

	hasNext    bool
	prevCFA    uint64 // CFA of the frame below the current one
	prevSignal bool   // that frame was a signal trampoline
	stop       StopReason
	err        error

	machine  dwarfexpr.Machine
	evalRegs *Registers // registers expressions read (the frame being stepped from)

	mods   [8]*Module // recently used modules, searched by address range
	modPos int

	blocks  [4]memBlock
	blockRR int
	// scratch receives reads that miss the block cache: a field, not a local,
	// so that passing it to the client's ReadMemory does not allocate.
	scratch [160]byte

	// Backtrace's reused symbol buffer (SymbolAppender) and the number of
	// frames of its last walk.
	syms      []Symbol
	lastDepth int

	// Frame pointers the last look-ahead vouched for (lookahead.go), and
	// the buffer of the next one.
	vouched, spare []uint64
	// callEndsAt's verdicts in this walk (anon.go).
	calls           [8]callVerdict
	callPos, nCalls int

	// Options.ReuseFrames (memo.go): the walk being recorded, the last
	// complete one, and the replay of it in progress: replay is the index
	// in last.frames of the next frame Step takes from it (-1: none).
	rec, last     walkRecord
	recOff        bool // this walk is not recorded (it read too much)
	replay        int
	frameReplayed bool // u.frame came from the replay
	replayShift   int  // depth in this walk minus depth in the recorded one
	reused        int
	noReuseBelow  int // recorded frames below this one had a read change

	// carry is the current frame's registers as gdb and libunwind see
	// them: a register no CFI rule recovered keeps the value it had in the
	// callee. Only a CFA rule reads it (carried.go).
	carry  Registers
	verify []byte // changedRead's buffer
}

// memBlock caches one aligned block of target memory, so a walk reads the
// stack in blocks rather than words.
type memBlock struct {
	addr uint64
	n    int // valid bytes
	data [blockSize]byte
}

const blockSize = 512

// New returns an Unwinder that reads the target through mem and asks lookup
// about code addresses.
func New(mem CopyIn, lookup LookupIP, opts *Options) *Unwinder {
	u := &Unwinder{mem: mem, lookup: lookup, replay: -1}
	if opts != nil {
		u.opts = *opts
	}
	if u.opts.MaxDepth <= 0 {
		u.opts.MaxDepth = defaultMaxDepth
	}
	return u
}

// Init starts a walk from the initial context: it reads the registers through
// CopyIn.ReadRegister and prepares frame 0 and the step to its caller.
func (u *Unwinder) Init() error {
	var regs Registers
	for r := 0; r < NumRegs; r++ {
		if v, ok := u.mem.ReadRegister(r); ok {
			regs.Set(r, v)
		}
	}
	return u.InitRegisters(&regs)
}

// InitRegisters starts a walk from the given registers (frame 0).
func (u *Unwinder) InitRegisters(regs *Registers) error {
	u.resetMemory()
	u.startWalk()
	u.depth = 0
	u.stop, u.err, u.hasNext = StopNone, nil, false
	u.prevCFA, u.prevSignal = 0, false
	u.vouched = u.vouched[:0]
	u.nCalls = 0
	pc, okPC := regs.Get(regRIP)
	sp, okSP := regs.Get(regRSP)
	if !okPC || !okSP {
		u.frame = Frame{}
		u.stop, u.err = StopCorrupt, ErrNoRegisters
		return ErrNoRegisters
	}
	u.frame = Frame{PC: pc, SP: sp, Exact: true, Regs: *regs}
	u.carry = *regs
	u.prepare()
	return nil
}

// Frame returns the current frame. It stays valid until the next Step or Init.
func (u *Unwinder) Frame() *Frame { return &u.frame }

// Depth is the index of the current frame (0 for the innermost).
func (u *Unwinder) Depth() int { return u.depth }

// Step moves to the caller of the current frame. It returns false when there
// is none; StopReason and Err then say why.
func (u *Unwinder) Step() bool {
	if !u.hasNext {
		return false
	}
	u.depth++
	if u.replay >= 0 {
		u.stepReplay()
		return true
	}
	u.carryTo(&u.next.Regs)
	u.frame = u.next
	u.frameReplayed = false
	u.hasNext = false
	u.prepare()
	return true
}

// StopReason says why the walk ended, or StopNone while it can continue.
func (u *Unwinder) StopReason() StopReason {
	if u.hasNext {
		return StopNone
	}
	return u.stop
}

// Err is the error behind a stop other than StopOutermost and StopDepthLimit.
func (u *Unwinder) Err() error { return u.err }

// Walk appends the current frame and all its callers to dst and returns the
// result and why the walk ended. It does not allocate when dst has room.
func (u *Unwinder) Walk(dst []Frame) ([]Frame, StopReason) {
	for {
		dst = append(dst, u.frame)
		if !u.Step() {
			return dst, u.stop
		}
	}
}

// prepare computes the caller of u.frame into u.next, or records the stop;
// with Options.ReuseFrames it records the step, and may find that the rest
// of the walk is the last one's.
func (u *Unwinder) prepare() {
	u.recordStep()
	u.prepareStep()
	if u.hasNext && u.opts.ReuseFrames {
		u.tryReuse()
	}
	u.recordFrame()
}

func (u *Unwinder) prepareStep() {
	f := &u.frame
	n := &u.next
	*n = Frame{}
	reason, err := u.unwindFrame(f, n)
	if reason != StopNone {
		u.stopWith(reason, err)
		return
	}
	if u.depth+1 >= u.opts.MaxDepth {
		u.stopWith(StopDepthLimit, nil)
		return
	}
	// Sanity: the caller's pc must be an address, and unless a signal frame is
	// involved the stack must grow towards the callers: the CFA lies above the
	// frame's sp and above the previous frame's CFA. This is what guarantees the
	// walk ends.
	// A zero return address ends the chain (as in gdb); a zero pc restored
	// from a signal context is a real frame (a call through a null pointer).
	if n.PC == 0 && !n.Exact {
		u.stopWith(StopOutermost, nil)
		return
	}
	if !canonical(n.PC) {
		u.stopWith(StopCorrupt, fmt.Errorf("%w: %#x", ErrNonCanonical, n.PC))
		return
	}
	if f.Kind != KindSignal {
		// The innermost frame may have popped its return address into
		// a register (glibc's vfork: CFA = sp, ra in rdi) and so have
		// its CFA at sp; any other frame's CFA is above its sp.
		popped := f.CFA == f.SP && u.depth == 0 && !u.prevSignal && n.SP == f.SP && n.PC != f.PC
		if f.CFA <= f.SP && !popped || u.depth > 0 && !u.prevSignal && f.CFA <= u.prevCFA {
			u.stopWith(StopCorrupt, ErrCFANotIncreasing)
			return
		}
	}
	u.prevCFA, u.prevSignal = f.CFA, f.Kind == KindSignal
	u.hasNext = true
}

func (u *Unwinder) stopWith(r StopReason, err error) {
	u.stop = r
	if err != nil {
		u.err = &StepError{Depth: u.depth, PC: u.frame.PC, Err: err}
	} else {
		u.err = nil
	}
	u.hasNext = false
}

// module returns the module containing pc, consulting the small
// address-range cache before the client's callback.
func (u *Unwinder) module(pc uint64) *Module {
	m, _ := u.moduleErr(pc)
	return m
}

// moduleErr is module with the client's error, which ends a walk (uwx: the
// lookup failed in a way that would make unwinding wrong).
func (u *Unwinder) moduleErr(pc uint64) (*Module, error) {
	for _, m := range u.mods {
		if m != nil && pc >= m.Start && pc < m.End {
			return m, nil
		}
	}
	m, err := u.lookup.LookupModule(pc)
	if err != nil || m == nil {
		return nil, err
	}
	if m.End > m.Start {
		u.mods[u.modPos] = m
		u.modPos = (u.modPos + 1) % len(u.mods)
	}
	return m, nil
}

// resetMemory forgets cached memory and module ranges: the target may have
// run (or loaded and unloaded modules) since the last walk.
func (u *Unwinder) resetMemory() {
	for i := range u.blocks {
		u.blocks[i].n = 0
	}
	u.mods = [len(u.mods)]*Module{}
}

// readMemory reads target memory through the block cache and returns the
// number of bytes read.
func (u *Unwinder) readMemory(buf []byte, addr uint64) int {
	base := addr &^ (blockSize - 1)
	off := int(addr - base)
	if off+len(buf) <= blockSize {
		for i := range u.blocks {
			b := &u.blocks[i]
			if b.n > 0 && b.addr == base && off+len(buf) <= b.n {
				return u.logged(addr, buf, copy(buf, b.data[off:off+len(buf)]))
			}
		}
		b := &u.blocks[u.blockRR]
		u.blockRR = (u.blockRR + 1) % len(u.blocks)
		n, _ := u.mem.ReadMemory(b.data[:], base)
		if n < 0 || n > blockSize {
			n = 0
		}
		b.addr, b.n = base, n
		if off+len(buf) <= n {
			return u.logged(addr, buf, copy(buf, b.data[off:off+len(buf)]))
		}
	}
	n, _ := u.mem.ReadMemory(buf, addr)
	if n < 0 || n > len(buf) {
		n = 0
	}
	return u.logged(addr, buf, n)
}

// logged records a read of n bytes of buf at addr for Options.ReuseFrames,
// and returns n.
func (u *Unwinder) logged(addr uint64, buf []byte, n int) int {
	if u.opts.ReuseFrames {
		u.logRead(addr, len(buf), buf[:n])
	}
	return n
}

// readWord reads a little-endian 64-bit word.
func (u *Unwinder) readWord(addr uint64) (uint64, bool) {
	base := addr &^ (blockSize - 1)
	off := int(addr - base)
	for i := range u.blocks {
		b := &u.blocks[i]
		if b.addr == base && off+8 <= b.n {
			if u.opts.ReuseFrames {
				u.logRead(addr, 8, b.data[off:off+8])
			}
			return binary.LittleEndian.Uint64(b.data[off:]), true
		}
	}
	b := u.read(addr, 8)
	if b == nil {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b), true
}

// read returns n (at most len(u.scratch)) bytes at addr, or nil when they
// cannot all be read. The result is valid until the next read.
func (u *Unwinder) read(addr uint64, n int) []byte {
	b := u.scratch[:n]
	if u.readMemory(b, addr) < n {
		return nil
	}
	return b
}

// exprTarget adapts the Unwinder to dwarfexpr.Target: memory through the block
// cache, registers from the frame being stepped from.
type exprTarget Unwinder

func (t *exprTarget) ReadMemory(buf []byte, addr uint64) (int, error) {
	return (*Unwinder)(t).readMemory(buf, addr), nil
}

func (t *exprTarget) Register(reg uint64) (uint64, error) {
	if t.evalRegs != nil && reg < NumRegs {
		if v, ok := t.evalRegs.Get(int(reg)); ok {
			return v, nil
		}
	}
	return 0, dwarfexpr.ErrUnknownRegister
}

// eval evaluates a CFI expression against regs, with push values pre-pushed.
func (u *Unwinder) eval(expr []byte, regs *Registers, push ...uint64) (uint64, error) {
	u.evalRegs = regs
	res, err := u.machine.Eval(expr, (*exprTarget)(u), &cfiExprConfig, push...)
	u.evalRegs = nil
	if err != nil {
		return 0, err
	}
	v, ok := res.Word()
	if !ok {
		return 0, errExprResult
	}
	return v, nil
}

var cfiExprConfig = dwarfexpr.Config{MaxSteps: 10000}

var errExprResult = errors.New("CFI expression did not compute an address or value")
