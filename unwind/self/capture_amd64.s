#include "textflag.h"

// func captureRegisters(r *[17]uint64)
//
// Stores the registers its caller will see right after the call returns, in
// DWARF order (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15, rip). The frame
// is empty ($0), so the return address is at 0(SP) and the caller's stack
// pointer after the return is SP+8; BP is still the caller's.
TEXT ·captureRegisters(SB), NOSPLIT, $0-8
	MOVQ r+0(FP), DI
	MOVQ AX, 0(DI)
	MOVQ DX, 8(DI)
	MOVQ CX, 16(DI)
	MOVQ BX, 24(DI)
	MOVQ SI, 32(DI)
	MOVQ $0, 40(DI)
	MOVQ BP, 48(DI)
	LEAQ r+0(FP), AX // the caller's sp after the return
	MOVQ AX, 56(DI)
	MOVQ R8, 64(DI)
	MOVQ R9, 72(DI)
	MOVQ R10, 80(DI)
	MOVQ R11, 88(DI)
	MOVQ R12, 96(DI)
	MOVQ R13, 104(DI)
	MOVQ R14, 112(DI)
	MOVQ R15, 120(DI)
	MOVQ 0(SP), AX
	MOVQ AX, 128(DI)
	RET
