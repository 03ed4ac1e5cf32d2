package unwind

import (
	"golang.org/x/arch/x86/x86asm"
)

// Code without CFI at an exact pc (frame 0, or a frame a signal
// interrupted), in a function that has not touched the stack pointer yet:
// glibc's clone and clone3 end their FDE before the system call, because the
// child runs on another stack (sysdeps/unix/sysv/linux/x86_64/clone3.S:
// "End FDE now, because in the child the unwind info will be wrong"), so a
// thread stopped in thread creation — after the syscall, before ret — is in
// no FDE. gdb's amd64 prologue analyzer handles it: no push %rbp, so the
// function is frameless and its return address is at [sp]. This is that
// rule, made strict: the instructions from the function's entry to the pc
// are decoded, and it applies only when none of them can have moved the
// stack pointer. For the child of a clone (the syscall returned 0 in rax,
// on a stack that holds no caller), the walk ends as glibc's CFI for the
// child says: the outermost frame.

// maxFramelessScan bounds how far from its entry a pc may be for the scan.
const maxFramelessScan = 512

// Linux x86-64 system call numbers of clone and clone3.
const (
	sysClone  = 56
	sysClone3 = 435
)

// frameless applies the rule; ok is false when it does not apply.
func (u *Unwinder) frameless(f, n *Frame) (reason StopReason, ok bool, err error) {
	syms, _ := u.lookup.SymbolInfo(f.Module, f.PC)
	if len(syms) == 0 {
		return 0, false, nil
	}
	start := syms[len(syms)-1].FuncStart
	if start == 0 || start > f.PC || f.PC-start > maxFramelessScan {
		return 0, false, nil
	}
	code := make([]byte, f.PC-start)
	if len(code) > 0 && u.readMemory(code, start) < len(code) {
		return 0, false, nil
	}
	eax := int64(-1) // the last immediate loaded into eax/rax, -1 unknown
	afterClone := false
	for off := 0; off < len(code); {
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil || inst.Len == 0 {
			return 0, false, nil
		}
		off += inst.Len
		afterClone = false
		switch inst.Op {
		case x86asm.SYSCALL:
			afterClone = eax == sysClone || eax == sysClone3
			continue
		case x86asm.MOV:
			if r, ok := inst.Args[0].(x86asm.Reg); ok && (r == x86asm.EAX || r == x86asm.RAX) {
				eax = -1
				if imm, ok := inst.Args[1].(x86asm.Imm); ok {
					eax = int64(imm)
				}
			}
		}
		if movesSP(&inst) {
			return 0, false, nil
		}
	}
	if afterClone {
		if rax, ok := f.Regs.Get(0); ok && rax == 0 {
			f.CFA = f.SP + 8
			f.Method = MethodPrologue
			return StopOutermost, true, nil
		}
	}
	ra, ok := u.readWord(f.SP)
	if !ok || !u.validReturn(ra) {
		return 0, false, nil
	}
	r, err := u.leaf(f, n, 0, MethodPrologue)
	return r, true, err
}

// movesSP reports whether an instruction may leave the stack pointer
// changed: pushes and pops, enter and leave, and anything that writes rsp
// or esp. A call returns with the stack pointer where it was.
func movesSP(inst *x86asm.Inst) bool {
	switch inst.Op {
	case x86asm.PUSH, x86asm.POP, x86asm.PUSHF, x86asm.POPF, x86asm.PUSHFQ, x86asm.POPFQ,
		x86asm.ENTER, x86asm.LEAVE, x86asm.RET, x86asm.JMP, x86asm.LJMP:
		return true
	case x86asm.CMP, x86asm.TEST, x86asm.CALL:
		return false
	}
	if r, ok := inst.Args[0].(x86asm.Reg); ok {
		return r == x86asm.RSP || r == x86asm.ESP || r == x86asm.SP
	}
	return false
}
