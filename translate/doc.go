// Package translate is sonde's counterpart of DynamoRIO's restore-state: every
// byte sonde changes or generates in a target is owned, shadowed and
// reversible, and every pc sonde invented maps back to the application's.
//
// It depends only on package arch's level (golang.org/x/arch's decoder), so
// backends (target/ptrace) and the probe engine above them share it.
//
// # Relocating one instruction
//
// Relocate makes an instruction run at another address:
//
//	r, err := translate.Relocate(code, appPC, dest, translate.Displaced)
//	// write r.Code at dest; if r.Scratch != NoReg, load it with r.ScratchValue
//	// (and put the application's value back afterwards); run; if the thread
//	// stops at dest+len(r.Code) it is at r.Next; if r.FixReturn, the word at
//	// rsp must become r.Next.
//
// Direct branches may be emulated instead (Relocation.Branch: no copy runs at
// all). Inline mode is for trampolines, where nobody fixes anything after the
// fact: a call pushes the application's return address itself and then jumps,
// and operands must be within ±2 GiB of the destination (ErrOutOfReach
// otherwise). Every Relocation carries a table (Range) from its bytes back to
// the application pc and stack-pointer adjustment, and AppPCAt applies it.
//
// Decoding uses x86asm for the opcode and length, and the package's own
// prefix/ModRM walk for the operand (x86asm misreads rip-relative VEX/EVEX
// operands as absolute ones): when the two disagree the instruction is
// refused, never guessed.
package translate
