#include "textflag.h"

// func prefetchLines(p *byte, n int)
//
// Asks for the cache lines of p[0:n] (PREFETCHT0, one per 64 bytes); n > 0.
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	ADDQ AX, CX
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, CX
	JB loop
	RET
