package unwind

import "math/bits"

// A caller-saved register no CFI rule recovers is unknown in the caller
// (sonde's rule, so that a caller's variables never show a callee's
// value). Hand-written assembly breaks the compilers' convention that a
// CFA rule after a call names only a callee-saved register: OpenSSL's
// perlasm saves the stack pointer in %rax (`lea (%rsp),%rax;
// .cfi_def_cfa_register %rax`) and calls internal routines it wrote not to
// touch %rax (aesni_gcm_encrypt calling _aesni_ctr32_ghash_6x,
// bn_mul4x_mont_gather5 calling mul4x_internal). Their CFA after the call
// is only computable with the callee's %rax, which is what gdb and
// libunwind (perf) use: they keep every register no rule changed. So a CFA
// rule, and only a CFA rule, falls back to the value the register had in
// the callee; the walk's checks (the CFA grows, the return address is code)
// still judge the result.

// carryTo updates u.carry, the current frame's registers with the lost ones
// kept from its callees, for the step to the caller whose registers are n.
func (u *Unwinder) carryTo(n *Registers) {
	// The registers the caller has replace the callee's; the others stay.
	for k := n.Known; k != 0; k &= k - 1 {
		r := bits.TrailingZeros32(k)
		u.carry.Values[r] = n.Values[r]
	}
	u.carry.Known |= n.Known
}

// carriedCFARegister returns, for a CFA rule naming register reg that the
// current frame's registers lack, the value the register had in the
// callee. The walk then depends on more than its frames' registers, so it
// is not recorded for reuse (Options.ReuseFrames compares those only).
func (u *Unwinder) carriedCFARegister(reg int) (uint64, bool) {
	if u.frameReplayed || calleeSaved(reg) || reg == regRSP || reg == regRIP {
		return 0, false
	}
	v, ok := u.carry.Get(reg)
	if ok {
		u.recOff = true
	}
	return v, ok
}
