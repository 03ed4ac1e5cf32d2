// Package unwind is sonde's stack unwinder, shaped like HP's Unwind Express
// (uwx): the engine knows no target. A client gives it two callbacks —
// CopyIn (read blocks of target memory, read registers of the initial
// context) and LookupIP (which module contains an IP, its unwind tables, and
// on request symbolic information) — and keeps its own state in the values
// that implement them (uwx's "token"). The same engine then unwinds live
// processes, core files, perf samples and the current process.
//
// The engine owns everything that must be right for every client: CFI from
// .eh_frame (searched through .eh_frame_hdr) and .debug_frame with DWARF
// expressions (package dwarfexpr), the pc-1 rule for callers, signal frames
// (the kernel's sigreturn trampoline; registers restored from the ucontext; no
// pc-1 below them), PLT stubs, a validated frame-pointer fallback where there
// is no CFI, code in no module (JIT code: a validated frame-pointer chain,
// or uwx's leaf rule — return address at [sp] — only when that address
// follows a call in executable memory; anon.go), glibc's CFI holes in
// clone/clone3 (frameless.go), inline-frame expansion from the client's symbolic information, a
// per-module cache of decoded CFI rows, and a stop reason for every walk. A
// corrupt stack ends the walk; it never loops: the CFA must increase (except
// across signal frames) and the depth is bounded.
package unwind

import (
	"errors"
	"fmt"
	"sync"

	"github.com/sondedbg/sonde/arch"
)

// NumRegs is the number of registers a frame tracks: DWARF numbers 0..16 on
// x86-64 (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15, rip).
const NumRegs = arch.DwarfRIP + 1

const (
	regRBX = arch.DwarfRBX
	regRBP = arch.DwarfRBP
	regRSP = arch.DwarfRSP
	regRIP = arch.DwarfRIP
	regR12 = 12
	regR15 = arch.DwarfR15
)

// CopyIn is the copy-in callback: how the engine reads the target. Its
// receiver is the client's state.
type CopyIn interface {
	// ReadMemory copies target memory at addr into buf and returns how many
	// bytes it copied. A short read (n < len(buf)) means the rest is
	// unreadable; err may say why. The engine reads blocks, not words.
	ReadMemory(buf []byte, addr uint64) (n int, err error)
	// ReadRegister returns the value of a register of the initial context
	// (DWARF numbering), or ok=false when it is unknown. When the walk starts
	// from a signal context, these are the registers of that context.
	ReadRegister(reg int) (value uint64, ok bool)
}

// MemoryView is what a CopyIn may add when target memory lies in its own
// buffers (a profiler's stack copy): the n bytes at addr in place, or nil
// when they are not all there. With Options.ReuseFrames the engine checks
// the bytes a recorded walk read against it, without copying them.
type MemoryView interface {
	ViewMemory(addr uint64, n int) []byte
}

// LookupIP is the lookup-ip callback: what the engine asks about code
// addresses. Its receiver is the client's state.
type LookupIP interface {
	// LookupModule returns the module containing pc, or (nil, nil) when no
	// module contains it (the engine then applies uwx's leaf rule). The engine
	// keeps per-module caches in the *Module, so a client should return the same
	// pointer for the same module.
	LookupModule(pc uint64) (*Module, error)
	// SymbolInfo returns what is known about pc, innermost first: inlined
	// calls, then the function that contains them. pc is the lookup pc (pc-1 for
	// a caller's return address). m is nil when pc is in no module. A nil
	// result means nothing is known.
	SymbolInfo(m *Module, pc uint64) ([]Symbol, error)
}

// SymbolAppender is an optional LookupIP method: SymbolInfo appending to
// dst, so that Backtrace, which copies each symbol into its frames at once,
// reuses one buffer for the whole walk instead of a slice per frame.
type SymbolAppender interface {
	AppendSymbolInfo(dst []Symbol, m *Module, pc uint64) ([]Symbol, error)
}

// Section is one unwind section's bytes and the (link-time) address of its
// first byte. The bytes may come from the file or, for the vDSO, from target
// memory.
type Section struct {
	Data []byte
	Addr uint64
}

// Module is a loaded object as the engine sees it: where it is, its load bias
// and its unwind sources. Clients create one per loaded object and return the
// same pointer from LookupModule every time; the engine attaches its decoded
// CFI and row cache to it.
type Module struct {
	Name       string
	Start, End uint64 // runtime address range the module covers (the engine caches lookups in it); End 0 = unknown
	Bias       uint64 // runtime address minus link-time address
	EHFrameHdr Section
	EHFrame    Section
	DebugFrame Section
	// Client is free for the client's own handle (symbol tables, file...).
	Client any

	shared  *Tables // SetTables
	ownOnce sync.Once
	own     *Tables // made from the sections when shared is nil
}

// Symbol is symbolic information for one (possibly inlined) function at an
// address.
type Symbol struct {
	Function    string // source name (demangled), "" when unknown
	LinkageName string // mangled/linkage name, "" when unknown or the same
	File        string // source file, "" when unknown
	Line        int    // 0 when unknown
	Column      int
	DeclLine    int    // where the function's definition starts, 0 when unknown
	FuncStart   uint64 // runtime entry address of the (outermost) function, 0 when unknown
}

// Registers is a register file in DWARF numbering with a known-mask.
type Registers struct {
	Values [NumRegs]uint64
	Known  uint32
}

// Get returns register reg and whether its value is known.
func (r *Registers) Get(reg int) (uint64, bool) {
	if reg < 0 || reg >= NumRegs || r.Known&(1<<uint(reg)) == 0 {
		return 0, false
	}
	return r.Values[reg], true
}

// Set records the value of register reg.
func (r *Registers) Set(reg int, v uint64) {
	if reg >= 0 && reg < NumRegs {
		r.Values[reg] = v
		r.Known |= 1 << uint(reg)
	}
}

// Forget marks register reg unknown.
func (r *Registers) Forget(reg int) {
	if reg >= 0 && reg < NumRegs {
		r.Known &^= 1 << uint(reg)
	}
}

// FrameKind classifies frames the way gdb's backtrace does.
type FrameKind uint8

const (
	KindNormal FrameKind = iota
	// KindSignal is the kernel's signal trampoline (gdb: "<signal handler
	// called>"); the frame above it was interrupted by the signal.
	KindSignal
	// KindInline is a function inlined into the physical frame below it; it
	// carries that frame's pc.
	KindInline
	// KindTailCall is a function that tail-called the frame below it, so
	// left no frame on the stack: rebuilt from call-site DWARF as gdb does
	// (gdb's TAILCALL_FRAME). Its pc is the address after the tail call.
	// The engine does not make these; its clients (package session) do.
	KindTailCall
)

func (k FrameKind) String() string {
	switch k {
	case KindSignal:
		return "signal"
	case KindInline:
		return "inline"
	case KindTailCall:
		return "tailcall"
	}
	return "normal"
}

// Method says how the engine found a frame's caller.
type Method uint8

const (
	MethodNone         Method = iota // not stepped (yet), or the walk stopped here
	MethodCFI                        // CFI row from .eh_frame or .debug_frame
	MethodSignal                     // ucontext of a signal trampoline without CFI
	MethodFramePointer               // validated rbp chain
	MethodLeaf                       // return address at [sp] (uwx rule, function entry, ret)
	MethodPrologue                   // frame-0 heuristics: after push %rbp
	// MethodLookahead is the rbp chain with a return address no call
	// pushed, vouched for by the chain above it (lookahead.go).
	MethodLookahead
)

func (m Method) String() string {
	return [...]string{"none", "cfi", "signal", "frame-pointer", "leaf", "prologue", "frame-pointer-lookahead"}[m]
}

// Frame is one physical frame.
type Frame struct {
	// PC is the frame's pc: the exact pc for frame 0 and for a frame a signal
	// interrupted, the return address for callers.
	PC uint64
	// SP is the stack pointer in this frame; CFA its canonical frame address
	// (0 when the walk could not compute it, e.g. at a stop).
	SP, CFA uint64
	// Exact is true when PC is the address of the next instruction to run in
	// this frame (frame 0, or interrupted by a signal): its code and line are
	// looked up at PC, not PC-1.
	Exact bool
	Kind  FrameKind // KindNormal or KindSignal
	// Method is how this frame's caller was found.
	Method Method
	Module *Module
	Regs   Registers
}

// LookupPC is the address to symbolize: PC for exact frames, PC-1 for
// callers (the return address may belong to the next function or line). A
// signal trampoline frame is looked up at its PC, as gdb does: it was entered
// by the kernel, not by a call. (Its CFI is found at PC-1, where glibc starts
// the trampoline's FDE.)
func (f *Frame) LookupPC() uint64 {
	if f.Exact || f.PC == 0 || f.Kind == KindSignal {
		return f.PC
	}
	return f.PC - 1
}

// cfiPC is where the engine looks for the frame's CFI, before it knows
// whether the frame is a signal trampoline.
func (f *Frame) cfiPC() uint64 {
	if f.Exact || f.PC == 0 {
		return f.PC
	}
	return f.PC - 1
}

// StopReason says why a walk ended.
type StopReason uint8

const (
	StopNone             StopReason = iota // the walk has not ended
	StopOutermost                          // the CFI says this is the last frame (undefined return address, pc 0)
	StopNoUnwindInfo                       // no CFI and no fallback that validates
	StopCorrupt                            // the stack contradicts itself (CFA not increasing, unknown registers, bad CFI)
	StopDepthLimit                         // Options.MaxDepth frames
	StopMemoryUnreadable                   // a needed stack slot could not be read
)

func (s StopReason) String() string {
	switch s {
	case StopNone:
		return "none"
	case StopOutermost:
		return "outermost"
	case StopNoUnwindInfo:
		return "no-unwind-info"
	case StopCorrupt:
		return "corrupt-stack"
	case StopDepthLimit:
		return "depth-limit"
	case StopMemoryUnreadable:
		return "memory-unreadable"
	}
	return fmt.Sprintf("StopReason(%d)", s)
}

// Errors returned by the engine (wrapped in *StepError with the frame and pc).
var (
	ErrNoRegisters      = errors.New("initial context lacks pc or sp")
	ErrCFANotIncreasing = errors.New("CFA does not increase")
	ErrRegisterUnknown  = errors.New("register needed by the unwind rule is unknown")
	ErrNoUnwindInfo     = errors.New("no unwind information and no valid frame-pointer chain")
	ErrMemory           = errors.New("stack memory unreadable")
	ErrNonCanonical     = errors.New("caller's pc is not a canonical address")
)

// StepError explains a stop other than StopOutermost/StopDepthLimit.
type StepError struct {
	Depth int    // index of the frame the engine was stepping from
	PC    uint64 // its pc
	Err   error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("unwind: frame %d (pc %#x): %v", e.Depth, e.PC, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }
