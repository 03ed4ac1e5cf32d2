package translate

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/arch/x86/x86asm"
)

// Mode says how relocated code will be run, which decides what it may leave
// to its caller.
type Mode uint8

const (
	// Displaced code is single-stepped by a debugger that can fix registers
	// and memory around the step (gdb's displaced stepping): a rip-relative
	// operand out of reach may go through a scratch register the caller loads
	// (Relocation.Scratch), and a call may push the copy's own return address
	// for the caller to rewrite (Relocation.FixReturn).
	Displaced Mode = iota
	// Inline code runs on its own, in a trampoline, with nobody to fix
	// anything: calls push the application's return address themselves and
	// rip-relative operands must be in reach of the destination.
	Inline
)

// Kind classifies an instruction by how its behaviour depends on where it runs.
type Kind uint8

const (
	// KindPlain does not depend on its address: the copy is the original.
	KindPlain Kind = iota
	// KindRIPRelative has a rip-relative memory operand (re-biased, or
	// through Scratch).
	KindRIPRelative
	// KindJump is a direct jmp rel8/rel32 (always taken).
	KindJump
	// KindCondJump is a direct conditional branch: jcc, loop, loope, loopne,
	// jrcxz, jecxz.
	KindCondJump
	// KindCall is a direct call rel32.
	KindCall
	// KindIndirectCall is call r/m64.
	KindIndirectCall
	// KindIndirect is ret or an indirect jmp: it leaves for an absolute
	// target and needs nothing but its rip-relative operand fixed.
	KindIndirect
	// KindSystem enters the kernel or traps on purpose (syscall, sysenter,
	// int n, int3): relocatable, but a debugger may prefer not to run it out
	// of line (it can block; syscall saves the return rip in rcx).
	KindSystem
)

var kindNames = [...]string{"plain", "rip-relative", "jump", "conditional jump", "call", "indirect call", "indirect", "system"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Reg is a general-purpose register by its x86-64 encoding number: 0 rax,
// 1 rcx, 2 rdx, 3 rbx, 4 rsp, 5 rbp, 6 rsi, 7 rdi, 8-15 r8-r15.
type Reg int8

// NoReg means no register.
const NoReg Reg = -1

var regNames = [...]string{"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"}

func (r Reg) String() string {
	if r >= 0 && int(r) < len(regNames) {
		return regNames[r]
	}
	return "none"
}

// Errors Relocate wraps (test with errors.Is). Each names a reason a caller
// falls back to another way of running the instruction.
var (
	ErrDecode        = errors.New("instruction does not decode")
	ErrUnrelocatable = errors.New("instruction cannot be relocated")
	ErrOutOfReach    = errors.New("target out of rel32 reach of the destination")
)

// RelocError says which instruction could not be relocated and why.
type RelocError struct {
	AppPC uint64
	Bytes []byte // the instruction (or what was given, when it did not decode)
	Why   string
	Err   error // one of ErrDecode, ErrUnrelocatable, ErrOutOfReach
}

func (e *RelocError) Error() string {
	return fmt.Sprintf("relocate % x at %#x: %s: %v", e.Bytes, e.AppPC, e.Why, e.Err)
}

func (e *RelocError) Unwrap() error { return e.Err }

// Range is one entry of a relocation's translation table: the code bytes
// [Off, End) of Code stand for the application instruction at AppPC, and the
// application's stack pointer there is the generated code's plus SPAdjust
// (non-zero between the push of an emulated call and its jump).
type Range struct {
	Off, End int
	AppPC    uint64
	SPAdjust int64
}

// Relocation is one instruction made to run at another address.
type Relocation struct {
	AppPC uint64 // where the instruction is in the application
	Len   int    // its length in bytes
	Dest  uint64 // where Code is meant to be written
	Mode  Mode
	Kind  Kind
	Op    x86asm.Op

	// Code behaves as the instruction did at AppPC when run at Dest: it either
	// falls through to Dest+len(Code), which stands for Next, or leaves for the
	// application target the original would have gone to. Callers append what
	// follows (a jump back to Next in a trampoline; nothing for a single step).
	Code []byte

	// Next is AppPC+Len: the fall-through pc, and the return address a call
	// pushes.
	Next uint64

	// Target is the absolute application target of a direct branch or call.
	Target uint64

	// Scratch, when not NoReg, is the register Code uses in place of rip
	// (Displaced mode only, for a rip-relative operand out of reach): the
	// caller saves its value, sets it to ScratchValue, runs Code, and puts the
	// saved value back, whatever happened (a fault included).
	Scratch      Reg
	ScratchValue uint64

	// FixReturn is set for a Displaced call: after it ran, the word at the
	// stack pointer is Dest+len(Code) and must be rewritten to Next.
	FixReturn bool

	// Table maps each byte of Code back to the application (see Range). A pc
	// of Dest+len(Code) maps to Next.
	Table []Range

	cond byte // condition code (low nibble of jcc) for jcc
}

// MaxInsnLen is the longest x86 instruction.
const MaxInsnLen = 15

// Relocate makes the instruction at the start of code, which the application
// has at appPC, run at dest. code may hold more bytes than the instruction.
//
// What changes, by Kind:
//   - plain and indirect instructions are copied (their rip-relative operand,
//     if any, fixed as below);
//   - a rip-relative displacement is re-biased when the operand stays within
//     ±2 GiB of the copy; otherwise, in Displaced mode, the operand is rewritten
//     to [scratch+disp32] (gdb's fixup_riprel): Scratch is a register the
//     instruction does not use, which the caller loads with the original rip;
//     in Inline mode it is ErrOutOfReach;
//   - jmp and jcc are re-encoded with a rel32 to the same absolute target (an
//     absolute `jmp [rip+0]` when out of reach); loop/jrcxz go through a short
//     jump over an absolute one; a caller may instead emulate any direct
//     branch with Relocation.Branch;
//   - call rel32: in Inline mode, the application's return address is pushed
//     and the target jumped to; in Displaced mode the call is re-encoded and
//     FixReturn set;
//   - call r/m: Inline pushes the application's return address and jumps
//     through the same operand (rejected when the operand is rsp-based, which
//     the push would move); Displaced copies it and sets FixReturn.
//
// Instructions rejected with ErrUnrelocatable: far and 16-bit branches, xbegin,
// 32-bit (eip-relative) addressing, and rip-relative operands x86asm locates
// no displacement for.
func Relocate(code []byte, appPC, dest uint64, mode Mode) (*Relocation, error) {
	if len(code) > MaxInsnLen {
		code = code[:MaxInsnLen]
	}
	if isEndbr(code) {
		// CET's endbr64/endbr32, first in every function of a build with
		// -fcf-protection (Debian's libstdc++: __cxa_throw, operator new):
		// x86asm reads F3 0F 1E FA as a lone rep prefix. Position
		// independent, a nop where IBT is off: copied as it is.
		insn := append([]byte(nil), code[:4]...)
		return &Relocation{AppPC: appPC, Len: 4, Dest: dest, Mode: mode, Op: x86asm.NOP, Next: appPC + 4,
			Scratch: NoReg, Code: insn, Table: []Range{{0, 4, appPC, 0}}}, nil
	}
	inst, err := x86asm.Decode(code, 64)
	if err != nil || inst.Op == 0 || inst.Len <= 0 || inst.Len > len(code) {
		return nil, &RelocError{appPC, append([]byte(nil), code...), "decode", ErrDecode}
	}
	insn := append([]byte(nil), code[:inst.Len]...)
	r := &Relocation{AppPC: appPC, Len: inst.Len, Dest: dest, Mode: mode, Op: inst.Op,
		Next: appPC + uint64(inst.Len), Scratch: NoReg}
	fail := func(why string, e error) (*Relocation, error) {
		return nil, &RelocError{appPC, insn, why, e}
	}
	pfx := prefixLen(insn)
	if pfx >= len(insn) {
		return fail("prefixes only", ErrDecode)
	}
	if inst.AddrSize == 32 {
		for _, a := range inst.Args {
			if _, ok := a.(x86asm.Mem); ok {
				return fail("32-bit addressing", ErrUnrelocatable)
			}
		}
	}
	if rel, ok := inst.Args[0].(x86asm.Rel); ok {
		return r.relocateBranch(inst, insn, pfx, int64(rel), fail)
	}
	switch inst.Op {
	case x86asm.LCALL, x86asm.LJMP, x86asm.XBEGIN:
		return fail("far branch or transaction", ErrUnrelocatable)
	case x86asm.SYSCALL, x86asm.SYSENTER, x86asm.INT, x86asm.INTO:
		r.Kind = KindSystem
	case x86asm.RET, x86asm.LRET, x86asm.IRET, x86asm.IRETD, x86asm.IRETQ:
		r.Kind = KindIndirect
	case x86asm.JMP:
		r.Kind = KindIndirect
	case x86asm.CALL:
		r.Kind = KindIndirectCall
	}
	if insn[pfx] == 0xcc {
		r.Kind = KindSystem
	}
	l, ok := decodeLayout(insn)
	if !ok {
		return fail("instruction layout", ErrDecode)
	}
	ripMem := l.ripRelative(insn)
	if hasRIPMem(inst) && (!ripMem || inst.PCRel != 4 || inst.PCRelOff != l.modrm+1) {
		return fail("decoders disagree on the rip-relative operand", ErrUnrelocatable)
	}
	if ripMem {
		if l.addr32 {
			return fail("32-bit (eip-relative) addressing", ErrUnrelocatable)
		}
		if l.modrm+5 > len(insn) {
			return fail("rip-relative operand past the instruction's end", ErrDecode)
		}
		if r.Kind == KindPlain {
			r.Kind = KindRIPRelative
		}
	}
	if r.Kind == KindIndirectCall && mode == Inline {
		return r.inlineIndirectCall(inst, insn, l, ripMem, fail)
	}
	if ripMem {
		if err := r.fixRIP(inst, insn, l, dest, fail); err != nil {
			return nil, err
		}
	} else {
		r.Code = insn
	}
	if r.Kind == KindIndirectCall {
		r.FixReturn = true
	}
	r.Table = []Range{{0, len(r.Code), appPC, 0}}
	return r, nil
}

// isEndbr reports whether code starts with endbr64 or endbr32 (no other
// prefix: compilers emit them bare).
func isEndbr(code []byte) bool {
	return len(code) >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && (code[3] == 0xfa || code[3] == 0xfb)
}

// fixRIP re-biases insn's rip-relative displacement for dest, or (Displaced)
// moves it to a scratch register. It sets r.Code.
func (r *Relocation) fixRIP(inst x86asm.Inst, insn []byte, l layout, dest uint64, fail func(string, error) (*Relocation, error)) error {
	off := l.modrm + 1
	disp := int64(int32(binary.LittleEndian.Uint32(insn[off:])))
	abs := r.Next + uint64(disp)
	code := append([]byte(nil), insn...)
	if d, ok := rel32(abs, dest+uint64(len(code))); ok {
		binary.LittleEndian.PutUint32(code[off:], uint32(d))
		r.Code = code
		return nil
	}
	if r.Mode != Displaced {
		_, err := fail(fmt.Sprintf("rip-relative operand %#x", abs), ErrOutOfReach)
		return err
	}
	reg := unusedLowReg(inst, insn, l)
	if reg == NoReg {
		_, err := fail("no scratch register", ErrUnrelocatable)
		return err
	}
	// mod=00 rm=101 (rip+disp32) becomes mod=10 rm=reg ([reg+disp32]); the
	// length does not change, so reg holds the original end-of-instruction rip.
	code[off-1] = 0x80 | code[off-1]&0x38 | byte(reg)
	clearRexB(code, l)
	r.Code = code
	r.Scratch = reg
	r.ScratchValue = r.Next
	return nil
}

// relocateBranch handles instructions whose operand is a relative target.
func (r *Relocation) relocateBranch(inst x86asm.Inst, insn []byte, pfx int, rel int64, fail func(string, error) (*Relocation, error)) (*Relocation, error) {
	if inst.DataSize == 16 || inst.Op == x86asm.XBEGIN {
		return fail("16-bit or transactional branch", ErrUnrelocatable)
	}
	r.Target = r.Next + uint64(rel)
	op := insn[pfx]
	if op&0xf0 == 0x40 { // REX (meaningless on a branch)
		pfx++
		op = insn[pfx]
	}
	switch {
	case inst.Op == x86asm.JMP:
		r.Kind = KindJump
		r.Code = r.jumpTo(nil, r.Dest)
	case inst.Op == x86asm.CALL:
		r.Kind = KindCall
		if r.Mode == Inline {
			code := pushImm64(nil, r.Next)
			r.Code = r.jumpTo(code, r.Dest+uint64(len(code)))
			r.Table = []Range{{0, 5, r.AppPC, 0}, {5, len(r.Code), r.AppPC, 8}}
			return r, nil
		}
		d, ok := rel32(r.Target, r.Dest+5)
		if !ok {
			// Out of reach: push through the absolute form; the return address
			// is the same fixup either way.
			r.Code = append([]byte{0xff, 0x15, 2, 0, 0, 0, 0xeb, 8}, le64(r.Target)...)
			// call [rip+2] ; jmp +8 ; .quad target — the pushed return address
			// is Dest+6, which FixReturn rewrites.
			r.FixReturn = true
			r.Table = []Range{{0, len(r.Code), r.AppPC, 0}}
			return r, nil
		}
		r.Code = append([]byte{0xe8}, le32(d)...)
		r.FixReturn = true
	case op >= 0x70 && op <= 0x7f:
		r.Kind, r.cond = KindCondJump, op&0xf
		r.Code = r.condJumpTo(op&0xf, r.Dest)
	case op == 0x0f && pfx+1 < len(insn) && insn[pfx+1]&0xf0 == 0x80:
		r.Kind, r.cond = KindCondJump, insn[pfx+1]&0xf
		r.Code = r.condJumpTo(insn[pfx+1]&0xf, r.Dest)
	case op >= 0xe0 && op <= 0xe3: // loopne, loope, loop, jrcxz/jecxz
		if op != 0xe3 && inst.AddrSize == 32 {
			return fail("loop on ecx", ErrUnrelocatable)
		}
		r.Kind = KindCondJump
		// [67] op +2 ; jmp short over the taken path ; taken: jump to target.
		// The short jump lands at the end of Code: the fall-through.
		lead := 0
		if inst.AddrSize == 32 {
			lead = 1 // keep 0x67: jecxz tests ecx
		}
		head := lead + 4
		taken := r.jumpTo(nil, r.Dest+uint64(head))
		code := []byte{0x67, op, 2, 0xeb, byte(len(taken))}[1-lead:]
		r.Code = append(code, taken...)
	default:
		return fail("unknown relative branch", ErrUnrelocatable)
	}
	r.Table = []Range{{0, len(r.Code), r.AppPC, 0}}
	return r, nil
}

// inlineIndirectCall turns call r/m into push of the application's return
// address plus jmp r/m (ff /2 → ff /4).
func (r *Relocation) inlineIndirectCall(inst x86asm.Inst, insn []byte, l layout, ripMem bool, fail func(string, error) (*Relocation, error)) (*Relocation, error) {
	for _, a := range inst.Args {
		if m, ok := a.(x86asm.Mem); ok && (m.Base == x86asm.RSP || m.Base == x86asm.ESP) {
			return fail("rsp-based indirect call", ErrUnrelocatable)
		}
	}
	op := l.op
	if l.vex != 0 || l.modrm != op+1 || insn[op] != 0xff || insn[op+1]>>3&7 != 2 {
		return fail("unexpected call encoding", ErrUnrelocatable)
	}
	push := pushImm64(nil, r.Next)
	jmp := append([]byte(nil), insn...)
	jmp[op+1] = jmp[op+1]&^0x38 | 4<<3
	if ripMem {
		off := l.modrm + 1
		disp := int64(int32(binary.LittleEndian.Uint32(insn[off:])))
		abs := r.Next + uint64(disp)
		d, ok := rel32(abs, r.Dest+uint64(len(push)+len(jmp)))
		if !ok {
			return fail(fmt.Sprintf("rip-relative operand %#x", abs), ErrOutOfReach)
		}
		binary.LittleEndian.PutUint32(jmp[off:], uint32(d))
	}
	r.Code = append(push, jmp...)
	r.Table = []Range{{0, 5, r.AppPC, 0}, {5, len(r.Code), r.AppPC, 8}}
	return r, nil
}

// jumpTo appends a jump from at (where the jump starts) to r.Target: jmp
// rel32, or jmp [rip+0] with the 8-byte target after it.
func (r *Relocation) jumpTo(code []byte, at uint64) []byte {
	if d, ok := rel32(r.Target, at+5); ok {
		return append(append(code, 0xe9), le32(d)...)
	}
	return append(append(code, 0xff, 0x25, 0, 0, 0, 0), le64(r.Target)...)
}

// condJumpTo encodes jcc to r.Target from at: jcc rel32, or the inverse jcc
// over an absolute jump.
func (r *Relocation) condJumpTo(cc byte, at uint64) []byte {
	if d, ok := rel32(r.Target, at+6); ok {
		return append([]byte{0x0f, 0x80 | cc}, le32(d)...)
	}
	abs := append([]byte{0xff, 0x25, 0, 0, 0, 0}, le64(r.Target)...)
	return append([]byte{0x70 | cc ^ 1, byte(len(abs))}, abs...)
}

// pushImm64 appends code pushing v (push imm32 sign-extends, so the high half
// is written separately when needed).
func pushImm64(code []byte, v uint64) []byte {
	code = append(append(code, 0x68), le32(int32(uint32(v)))...)
	if uint64(int64(int32(uint32(v)))) != v {
		code = append(append(code, 0xc7, 0x44, 0x24, 0x04), le32(int32(uint32(v>>32)))...)
	}
	return code
}

// Branch computes what a direct branch (KindJump, KindCondJump, KindCall)
// does in the given registers, for callers that emulate it instead of running
// Code: the next pc, rcx after it (loop decrements rcx), and whether Next must
// be pushed as a return address. ok is false for other kinds.
func (r *Relocation) Branch(rflags, rcx uint64) (pc, rcxOut uint64, push, ok bool) {
	rcxOut = rcx
	switch r.Kind {
	case KindJump:
		return r.Target, rcx, false, true
	case KindCall:
		return r.Target, rcx, true, true
	case KindCondJump:
	default:
		return 0, rcx, false, false
	}
	taken := false
	switch r.Op {
	case x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
		rcxOut = rcx - 1
		zf := rflags&flagZF != 0
		taken = rcxOut != 0 && (r.Op == x86asm.LOOP || (r.Op == x86asm.LOOPE) == zf)
	case x86asm.JRCXZ:
		taken = rcx == 0
	case x86asm.JECXZ:
		taken = uint32(rcx) == 0
	default:
		taken = CondHolds(r.cond, rflags)
	}
	if taken {
		return r.Target, rcxOut, false, true
	}
	return r.Next, rcxOut, false, true
}

// RFLAGS bits the conditions read.
const (
	flagCF = 1 << 0
	flagPF = 1 << 2
	flagZF = 1 << 6
	flagSF = 1 << 7
	flagOF = 1 << 11
)

// CondHolds evaluates the x86 condition code cc (the low nibble of a jcc,
// setcc or cmovcc opcode) on rflags.
func CondHolds(cc byte, rflags uint64) bool {
	f := func(bit uint64) bool { return rflags&bit != 0 }
	var v bool
	switch cc >> 1 {
	case 0: // o
		v = f(flagOF)
	case 1: // b
		v = f(flagCF)
	case 2: // e
		v = f(flagZF)
	case 3: // be
		v = f(flagCF) || f(flagZF)
	case 4: // s
		v = f(flagSF)
	case 5: // p
		v = f(flagPF)
	case 6: // l
		v = f(flagSF) != f(flagOF)
	case 7: // le
		v = f(flagZF) || f(flagSF) != f(flagOF)
	}
	return v != (cc&1 == 1)
}

// AppPCAt maps a pc in or right after the copy at Dest back to the
// application: inside Code it is AppPC (the instruction has not completed), at
// Dest+len(Code) it is Next. ok is false for any other pc.
func (r *Relocation) AppPCAt(pc uint64) (app uint64, spAdjust int64, ok bool) {
	if pc < r.Dest || pc > r.Dest+uint64(len(r.Code)) {
		return 0, 0, false
	}
	off := int(pc - r.Dest)
	if off == len(r.Code) {
		return r.Next, 0, true
	}
	for _, e := range r.Table {
		if off >= e.Off && off < e.End {
			return e.AppPC, e.SPAdjust, true
		}
	}
	return r.AppPC, 0, true
}

// hasRIPMem reports whether inst has a rip-relative memory operand.
func hasRIPMem(inst x86asm.Inst) bool {
	for _, a := range inst.Args {
		if m, ok := a.(x86asm.Mem); ok && (m.Base == x86asm.RIP || m.Base == x86asm.EIP) {
			return true
		}
	}
	return false
}

// unusedLowReg picks a scratch register among rsi, rdi and rbx that inst does
// not name. Registers used implicitly with a memory operand are avoided by the
// choice of candidates: rax and rdx (mul, div, cmpxchg), rcx (shifts by cl),
// rsp and rbp are never candidates, and rbx (cmpxchg16b) comes last.
func unusedLowReg(inst x86asm.Inst, insn []byte, l layout) Reg {
	used := uint16(0)
	// The raw ModRM.reg and vvvv fields too (low three bits, whatever their
	// extension): x86asm's operands for VEX forms are not to be trusted.
	if l.modrm >= 0 && l.modrm < len(insn) {
		used |= 1 << (insn[l.modrm] >> 3 & 7)
	}
	if l.vvvv >= 0 {
		used |= 1 << (l.vvvv & 7)
	}
	for _, a := range inst.Args {
		switch a := a.(type) {
		case x86asm.Reg:
			if g := gpr(a); g != NoReg {
				used |= 1 << g
			}
		case x86asm.Mem:
			for _, x := range []x86asm.Reg{a.Base, a.Index} {
				if g := gpr(x); g != NoReg {
					used |= 1 << g
				}
			}
		}
	}
	if inst.Op == x86asm.CMPXCHG16B || inst.Op == x86asm.CMPXCHG8B {
		used |= 1 << 3
	}
	for _, c := range []Reg{6, 7, 3} {
		if used&(1<<c) == 0 {
			return c
		}
	}
	return NoReg
}

// gpr maps an x86asm general-purpose register of any width to its encoding
// number.
func gpr(r x86asm.Reg) Reg {
	switch {
	case r >= x86asm.AL && r <= x86asm.BL:
		return Reg(r - x86asm.AL)
	case r >= x86asm.AH && r <= x86asm.BH:
		return Reg(r - x86asm.AH)
	case r >= x86asm.SPB && r <= x86asm.R15B:
		return Reg(r-x86asm.SPB) + 4
	case r >= x86asm.AX && r <= x86asm.R15W:
		return Reg(r - x86asm.AX)
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return Reg(r - x86asm.EAX)
	case r >= x86asm.RAX && r <= x86asm.R15:
		return Reg(r - x86asm.RAX)
	}
	return NoReg
}

// prefixLen returns the number of legacy prefix bytes at the start of insn
// (REX, VEX and EVEX not included).
func prefixLen(insn []byte) int {
	n := 0
	for n < len(insn) && n < MaxInsnLen {
		switch insn[n] {
		case 0x66, 0x67, 0xf0, 0xf2, 0xf3, 0x2e, 0x36, 0x3e, 0x26, 0x64, 0x65:
			n++
			continue
		}
		break
	}
	return n
}

// clearRexB clears the base-extension bit (REX.B; VEX, XOP and EVEX store
// it inverted) so that ModRM.rm names one of the low eight registers.
func clearRexB(code []byte, l layout) {
	switch l.vex {
	case 0:
		if l.rex >= 0 {
			code[l.rex] &^= 1
		}
	case 0xc4, 0x8f:
		code[l.op-2] |= 0x20
	case 0x62:
		code[l.op-3] |= 0x20
	}
	// VEX2 (c5) has no B bit: it is 0.
}

// rel32 returns the displacement from "from" to "to" when it fits a signed
// 32-bit field.
func rel32(to, from uint64) (int32, bool) {
	d := int64(to - from)
	return int32(d), d == int64(int32(d))
}

func le32(v int32) []byte {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(v))
	return b[:]
}

func le64(v uint64) []byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return b[:]
}
