package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sondedbg/sonde/arch"
	"github.com/sondedbg/sonde/dwarfexpr"
	"github.com/sondedbg/sonde/unwind/cfi"
)

// unwindFrame computes f's CFA and Method and the registers of its caller
// into n. It returns StopNone when n is a frame to continue with.
func (u *Unwinder) unwindFrame(f, n *Frame) (StopReason, error) {
	lpc := f.cfiPC()
	m, err := u.moduleErr(lpc)
	if err != nil {
		return StopNoUnwindInfo, fmt.Errorf("lookup-ip callback: %w", err)
	}
	f.Module = m
	var cfiErr error
	if m != nil {
		row, err := m.row(lpc)
		if row != nil {
			// A return address right at the end of an FDE may be a signal
			// trampoline without CFI that follows another function (glibc
			// covers the nop before __restore_rt; other libcs need not).
			if !f.Exact && !row.SignalFrame && lpc-m.Bias+1 == row.End && u.atSigreturn(f) {
				return u.signalContext(f, n)
			}
			return u.applyRow(f, n, row)
		}
		cfiErr = err // damaged CFI: the fallbacks may still work
	}
	if u.atSigreturn(f) {
		return u.signalContext(f, n)
	}
	if f.Exact {
		if m == nil {
			// JIT code or a call through a bad pointer: validated leaf
			// and frame-pointer rules (anon.go).
			return u.anonymous(f, n)
		}
		if r, ok, err := u.prologue(f, n); ok {
			return r, err
		}
		if r, ok, err := u.frameless(f, n); ok {
			return r, err
		}
	}
	if !u.opts.NoFramePointer {
		if r, ok, err := u.framePointer(f, n); ok {
			return r, err
		}
	}
	if cfiErr != nil {
		return StopCorrupt, cfiErr
	}
	return StopNoUnwindInfo, ErrNoUnwindInfo
}

// calleeSaved reports whether the System V ABI makes the callee preserve reg
// (rbx, rbp, r12-r15): without a rule its value is the same in the caller.
func calleeSaved(reg int) bool {
	return reg == regRBX || reg == regRBP || reg >= regR12 && reg <= regR15
}

func classify(err error) StopReason {
	if errors.Is(err, dwarfexpr.ErrMemory) || errors.Is(err, ErrMemory) {
		return StopMemoryUnreadable
	}
	return StopCorrupt
}

// applyRow recovers the caller's registers with a CFI row.
func (u *Unwinder) applyRow(f, n *Frame, row *cfi.Row) (StopReason, error) {
	regs := &f.Regs
	var cfa uint64
	switch row.CFA.Kind {
	case cfi.RuleCFARegOffset:
		v, ok := regs.Get(int(row.CFA.Reg))
		if !ok {
			v, ok = u.carriedCFARegister(int(row.CFA.Reg))
		}
		if !ok {
			return StopCorrupt, fmt.Errorf("%w: CFA register %d", ErrRegisterUnknown, row.CFA.Reg)
		}
		cfa = v + uint64(row.CFA.Offset)
	case cfi.RuleCFAExpression:
		v, err := u.eval(row.CFA.Expr, regs)
		if err != nil {
			return classify(err), fmt.Errorf("CFA expression: %w", err)
		}
		cfa = v
	default:
		return StopCorrupt, fmt.Errorf("CFI row at %s+%#x has no CFA rule", row.Section, row.FDEOffset)
	}
	f.CFA = cfa
	f.Method = MethodCFI
	if row.SignalFrame {
		f.Kind = KindSignal
		n.Exact = true
	}
	ra := int(row.RAReg)
	if row.Regs[ra].Kind == cfi.RuleUndefined {
		return StopOutermost, nil
	}
	for r := 0; r < NumRegs; r++ {
		rule := &row.Regs[r]
		switch rule.Kind {
		case cfi.RuleUnspecified:
			switch {
			case r == regRSP:
				n.Regs.Set(r, cfa) // x86-64: the caller's sp is the CFA
			case r == ra:
				// Every x86-64 CIE says this; be lenient with ones that do not.
				if v, ok := u.readWord(cfa - 8); ok {
					n.Regs.Set(r, v)
				}
			case calleeSaved(r):
				if v, ok := regs.Get(r); ok {
					n.Regs.Set(r, v)
				}
			}
		case cfi.RuleUndefined:
		case cfi.RuleSameValue:
			if v, ok := regs.Get(r); ok {
				n.Regs.Set(r, v)
			}
		case cfi.RuleOffset:
			if v, ok := u.readWord(cfa + uint64(rule.Offset)); ok {
				n.Regs.Set(r, v)
			} else if r == ra {
				return StopMemoryUnreadable, fmt.Errorf("%w: return address at %#x", ErrMemory, cfa+uint64(rule.Offset))
			}
		case cfi.RuleValOffset:
			n.Regs.Set(r, cfa+uint64(rule.Offset))
		case cfi.RuleRegister:
			if v, ok := regs.Get(int(rule.Reg)); ok {
				n.Regs.Set(r, v)
			}
		case cfi.RuleExpression, cfi.RuleValExpression:
			v, err := u.eval(rule.Expr, regs, cfa)
			if err == nil && rule.Kind == cfi.RuleExpression {
				addr := v
				var ok bool
				if v, ok = u.readWord(addr); !ok {
					err = fmt.Errorf("%w at %#x", ErrMemory, addr)
				}
			}
			if err == nil {
				n.Regs.Set(r, v)
			} else if r == ra || r == regRSP {
				return classify(err), fmt.Errorf("register %d rule: %w", r, err)
			}
		}
	}
	pc, ok := n.Regs.Get(ra)
	if !ok {
		return StopCorrupt, fmt.Errorf("%w: return address", ErrRegisterUnknown)
	}
	sp, ok := n.Regs.Get(regRSP)
	if !ok {
		return StopCorrupt, fmt.Errorf("%w: caller's sp", ErrRegisterUnknown)
	}
	n.Regs.Set(regRIP, pc)
	n.PC, n.SP = pc, sp
	return StopNone, nil
}

// The x86-64 Linux sigreturn trampoline: mov $15,%rax; syscall.
var sigreturnCode = [9]byte{0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05}

// atSigreturn reports whether f's pc is the kernel's signal trampoline
// (__restore_rt), recognised by its code when it has no CFI.
func (u *Unwinder) atSigreturn(f *Frame) bool {
	if b := u.read(f.PC, 9); b != nil && [9]byte(b) == sigreturnCode {
		return true
	}
	// Frame 0 stopped on the syscall instruction itself.
	if !f.Exact || f.PC < 7 {
		return false
	}
	b := u.read(f.PC-7, 9)
	return b != nil && [9]byte(b) == sigreturnCode
}

// Offsets in the rt_sigframe the kernel builds (arch/x86/include/uapi/asm/sigcontext.h):
// the trampoline runs with sp at the ucontext; its mcontext's general
// registers start at offset 40, in this order.
const ucMcontext = 40

var sigcontextRegs = [...]int{8, 9, 10, 11, 12, 13, 14, 15, // r8-r15
	arch.DwarfRDI, arch.DwarfRSI, arch.DwarfRBP, arch.DwarfRBX, arch.DwarfRDX,
	arch.DwarfRAX, arch.DwarfRCX, arch.DwarfRSP, arch.DwarfRIP}

// signalContext recovers the interrupted frame from the ucontext on the stack.
func (u *Unwinder) signalContext(f, n *Frame) (StopReason, error) {
	base := f.SP + ucMcontext
	b := u.read(base, len(sigcontextRegs)*8)
	if b == nil {
		return StopMemoryUnreadable, fmt.Errorf("%w: signal context at %#x", ErrMemory, base)
	}
	for i, r := range sigcontextRegs {
		n.Regs.Set(r, binary.LittleEndian.Uint64(b[8*i:]))
	}
	f.Kind = KindSignal
	f.Method = MethodSignal
	f.CFA = f.SP
	n.Exact = true
	n.PC = n.Regs.Values[regRIP]
	n.SP = n.Regs.Values[regRSP]
	return StopNone, nil
}

// leaf applies "the return address is at [sp+off]" (off is 0 at a function's
// first instruction or its ret, 8 after push %rbp).
func (u *Unwinder) leaf(f, n *Frame, off uint64, method Method) (StopReason, error) {
	ra, ok := u.readWord(f.SP + off)
	if !ok {
		return StopMemoryUnreadable, fmt.Errorf("%w: return address at %#x", ErrMemory, f.SP+off)
	}
	for r := 0; r < NumRegs; r++ {
		if calleeSaved(r) {
			if v, ok := f.Regs.Get(r); ok {
				n.Regs.Set(r, v)
			}
		}
	}
	if off == 8 {
		if bp, ok := u.readWord(f.SP); ok {
			n.Regs.Set(regRBP, bp)
		} else {
			n.Regs.Forget(regRBP)
		}
	}
	f.CFA = f.SP + off + 8
	f.Method = method
	n.Regs.Set(regRSP, f.CFA)
	n.Regs.Set(regRIP, ra)
	n.PC, n.SP = ra, f.CFA
	return StopNone, nil
}

// prologue handles frame 0 (or a frame a signal interrupted) in code without
// CFI at the positions where the frame-pointer chain is not yet (or no longer)
// set up: the first instruction, after push %rbp, and ret.
func (u *Unwinder) prologue(f, n *Frame) (reason StopReason, ok bool, err error) {
	b := u.read(f.PC, 4)
	if b == nil {
		return 0, false, nil
	}
	switch {
	case b[0] == 0xc3, b[0] == 0xf3 && b[1] == 0xc3, // ret, rep ret: the return address is at [sp] by definition
		b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa: // endbr64: a function entry
		r, err := u.leaf(f, n, 0, MethodPrologue)
		return r, true, err
	case b[0] == 0x55 && u.atFunctionEntry(f): // push %rbp as the first instruction
		r, err := u.leaf(f, n, 0, MethodPrologue)
		return r, true, err
	case b[0] == 0x48 && b[1] == 0x89 && b[2] == 0xe5: // mov %rsp,%rbp right after push %rbp
		if p := u.read(f.PC-1, 1); p != nil && p[0] == 0x55 {
			r, err := u.leaf(f, n, 8, MethodPrologue)
			return r, true, err
		}
	}
	return 0, false, nil
}

// atFunctionEntry reports whether f's pc is its function's entry (after an
// optional endbr64), using the client's symbol information: a push %rbp in
// the middle of a function saves a callee-saved register, it does not start
// a frame. Without symbol information it cannot refute, so it says yes.
func (u *Unwinder) atFunctionEntry(f *Frame) bool {
	syms, _ := u.lookup.SymbolInfo(f.Module, f.PC)
	if len(syms) == 0 || syms[len(syms)-1].FuncStart == 0 {
		return true
	}
	start := syms[len(syms)-1].FuncStart
	if f.PC == start {
		return true
	}
	b := u.read(start, 4)
	return f.PC == start+4 && b != nil && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa
}

// maxFrameSize bounds the distance between sp and rbp the frame-pointer
// fallback accepts.
const maxFrameSize = 64 << 20

// framePointer follows the rbp chain for one frame, but only when the result
// is credible: rbp lies on the stack above sp and is aligned, the saved
// return address is in a known module or in executable memory the client
// vouches for (JIT code, see anon.go), and the instruction before it is a
// call — or, in code in no file, the chain above vouches for it
// (lookahead.go). A guess that fails any test ends the walk instead of
// inventing a frame.
func (u *Unwinder) framePointer(f, n *Frame) (reason StopReason, ok bool, err error) {
	bp, ok := f.Regs.Get(regRBP)
	if !ok || bp < f.SP || bp&7 != 0 || bp-f.SP > maxFrameSize {
		return 0, false, nil
	}
	b := u.read(bp, 16)
	if b == nil {
		return 0, false, nil
	}
	savedBP := binary.LittleEndian.Uint64(b)
	ra := binary.LittleEndian.Uint64(b[8:])
	if ra == 0 {
		if savedBP == 0 {
			f.CFA = bp + 16
			f.Method = MethodFramePointer
			return StopOutermost, true, nil
		}
		return 0, false, nil
	}
	method := MethodFramePointer
	switch {
	case u.vouchedFor(bp): // the chain above was walked from a frame below
		method = MethodLookahead
	case u.validReturn(ra):
	case u.lookaheadVouches(bp, ra):
		method = MethodLookahead
	default:
		return 0, false, nil
	}
	for r := 0; r < NumRegs; r++ {
		if calleeSaved(r) {
			if v, ok := f.Regs.Get(r); ok {
				n.Regs.Set(r, v)
			}
		}
	}
	f.CFA = bp + 16
	f.Method = method
	n.Regs.Set(regRBP, savedBP)
	n.Regs.Set(regRSP, f.CFA)
	n.Regs.Set(regRIP, ra)
	n.PC, n.SP = ra, f.CFA
	return StopNone, true, nil
}

// followsCall reports whether the bytes before ra end with a call
// instruction (any x86-64 encoding of call rel32 or call r/m64). When the code
// cannot be read it cannot refute, so it says yes.
func (u *Unwinder) followsCall(ra uint64) bool {
	if ra < 7 {
		return false
	}
	b := u.read(ra-7, 7)
	if b == nil {
		return true
	}
	at := func(back int) byte { return b[7-back] }
	isCallRM := func(back int) bool { // FF /2 with a modrm at back-1
		return at(back) == 0xff && (at(back-1)>>3)&7 == 2
	}
	switch {
	case at(5) == 0xe8: // call rel32
		return true
	case isCallRM(2) && at(1)>>6 == 3: // call *%reg
		return true
	case isCallRM(2) && at(1)>>6 == 0 && at(1)&7 != 4 && at(1)&7 != 5: // call *(%reg), as ld.so's _dl_call_fini
		return true
	case isCallRM(3) && (at(2)>>6 == 1 || at(2)&0xc7 == 0x04): // disp8, or SIB no disp
		return true
	case isCallRM(4) && at(3)>>6 == 1 && at(3)&7 == 4: // SIB + disp8
		return true
	case isCallRM(6) && (at(5)>>6 == 2 || at(5)&0xc7 == 0x05): // disp32 or rip-relative
		return true
	case isCallRM(7) && (at(6)>>6 == 2 || at(6)&0xc7 == 0x04): // SIB + disp32
		return true
	}
	return false
}
