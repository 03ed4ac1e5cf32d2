package disasm

import "golang.org/x/arch/x86/x86asm"

// Flow classifies what an instruction does to the program counter; the
// run-control layer uses it to step over calls, out of functions and across
// system calls.
type Flow uint8

const (
	// FlowNone: execution continues at the next instruction.
	FlowNone Flow = iota
	// FlowCall: a call (direct or indirect); execution returns to Next().
	FlowCall
	// FlowJump: an unconditional jump (direct or indirect).
	FlowJump
	// FlowCondJump: a conditional branch (jcc, loop, jrcxz, xbegin).
	FlowCondJump
	// FlowReturn: ret, lret, iret.
	FlowReturn
	// FlowSyscall: syscall, sysenter, int n, into (enter the kernel, then
	// normally continue at Next()).
	FlowSyscall
	// FlowTrap: int3, ud0/1/2, hlt, or an undecodable byte: stops the thread
	// with a signal when executed.
	FlowTrap
)

var flowNames = [...]string{"none", "call", "jump", "conditional jump", "return", "syscall", "trap"}

func (f Flow) String() string {
	if int(f) < len(flowNames) {
		return flowNames[f]
	}
	return "Flow(?)"
}

// Flow returns the control-flow class of the instruction.
func (in *Instruction) Flow() Flow {
	switch in.Kind {
	case Bad:
		return FlowTrap
	case Named:
		return in.named.flow
	}
	switch in.inst.Op {
	case x86asm.CALL, x86asm.LCALL:
		return FlowCall
	case x86asm.JMP, x86asm.LJMP:
		return FlowJump
	case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE, x86asm.JNE,
		x86asm.JG, x86asm.JGE, x86asm.JL, x86asm.JLE, x86asm.JO, x86asm.JNO,
		x86asm.JP, x86asm.JNP, x86asm.JS, x86asm.JNS,
		x86asm.JCXZ, x86asm.JECXZ, x86asm.JRCXZ,
		x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE, x86asm.XBEGIN:
		return FlowCondJump
	case x86asm.RET, x86asm.LRET, x86asm.IRET, x86asm.IRETD, x86asm.IRETQ:
		return FlowReturn
	case x86asm.SYSCALL, x86asm.SYSENTER, x86asm.INTO:
		return FlowSyscall
	case x86asm.INT:
		if p := legacyPrefixLen(in.Bytes); p < len(in.Bytes) && in.Bytes[p] == 0xcc {
			return FlowTrap // int3
		}
		return FlowSyscall
	case x86asm.UD0, x86asm.UD1, x86asm.UD2, x86asm.HLT:
		return FlowTrap
	}
	return FlowNone
}

// IsCall reports whether the instruction is a call, and the address the callee
// returns to.
func (in *Instruction) IsCall() (returnAddr uint64, ok bool) {
	if in.Flow() != FlowCall {
		return 0, false
	}
	return in.Next(), true
}

// IsReturn reports whether the instruction returns from a function (ret, lret,
// iret).
func (in *Instruction) IsReturn() bool { return in.Flow() == FlowReturn }

// IsJump reports whether the instruction is a jump, conditional or not, direct
// or indirect (calls and returns are not jumps).
func (in *Instruction) IsJump() bool {
	f := in.Flow()
	return f == FlowJump || f == FlowCondJump
}

// BranchTarget returns the destination of a direct (PC-relative) call or jump.
// Indirect branches (through a register or memory) have no static target: ok
// is false for them, as for every other instruction.
func (in *Instruction) BranchTarget() (target uint64, ok bool) {
	if in.Kind != Decoded {
		return 0, false
	}
	if rel, isRel := in.inst.Args[0].(x86asm.Rel); isRel {
		return in.Next() + uint64(int64(rel)), true
	}
	return 0, false
}

// MemoryTarget returns the address of a RIP-relative memory operand (as in
// `lea 0x2ee5(%rip),%rdi`), which objdump annotates with `# addr <symbol>`.
func (in *Instruction) MemoryTarget() (addr uint64, ok bool) {
	if in.Kind != Decoded {
		return 0, false
	}
	for _, a := range in.inst.Args {
		if a == nil {
			break
		}
		if m, isMem := a.(x86asm.Mem); isMem && m.Base == x86asm.RIP {
			return in.Next() + uint64(m.Disp), true
		}
	}
	return 0, false
}

// PCRelative locates the PC-relative field of the instruction: the rel8/rel32
// of a direct branch or the disp32 of a RIP-relative memory operand, as an
// offset into Bytes and a size in bytes. Code that moves an instruction to
// another address (displaced stepping, probe trampolines) must rewrite it.
func (in *Instruction) PCRelative() (offset, size int, ok bool) {
	if in.Kind != Decoded {
		return 0, 0, false
	}
	if _, isBranch := in.BranchTarget(); isBranch {
		code := in.Bytes[in.lead:]
		i := legacyPrefixLen(code)
		if i < len(code) && code[i]&0xf0 == 0x40 {
			i++
		}
		size = 4
		if i < len(code) {
			switch op := code[i]; {
			case op == 0xeb, op >= 0x70 && op <= 0x7f, op >= 0xe0 && op <= 0xe3:
				size = 1
			}
		}
		return in.Len - size, size, true // the rel field ends the instruction
	}
	if _, isRIP := in.MemoryTarget(); isRIP {
		if enc := addressing(in.Bytes[in.lead:]); enc.ok && enc.mod == 0 && enc.rm == 5 {
			return in.lead + enc.pos + 1, 4, true
		}
	}
	return 0, 0, false
}
