/* uw_asm_call(fn): calls fn with a frame whose CFA rule is a hand-written
 * DWARF expression (.cfi_escape), after realigning the stack, so that only a
 * real DWARF stack machine can unwind through it. */
	.text
	.globl	uw_asm_call
	.type	uw_asm_call, @function
uw_asm_call:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	/* DW_CFA_def_cfa_expression { DW_OP_breg6 (rbp) +16 } */
	.cfi_escape 0x0f, 0x02, 0x76, 0x10
	/* DW_CFA_expression rbp { DW_OP_breg6 +0 }: saved rbp at [rbp] */
	.cfi_escape 0x10, 0x06, 0x02, 0x76, 0x00
	subq	$40, %rsp
	andq	$-32, %rsp
	call	*%rdi
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	uw_asm_call, .-uw_asm_call
	.section	.note.GNU-stack,"",@progbits

/* uw_restorer: a signal trampoline without CFI, placed right after a
 * function that has CFI (as musl and hand-made runtimes do). A caller's
 * pc-1 lands in uw_before_restorer's FDE; only the sigreturn code tells the
 * unwinder this is a signal frame. */
	.text
	.globl	uw_before_restorer
	.type	uw_before_restorer, @function
uw_before_restorer:
	.cfi_startproc
	ret
	.cfi_endproc
	.size	uw_before_restorer, .-uw_before_restorer
	.globl	uw_restorer
	.type	uw_restorer, @function
uw_restorer:
	/* mov $15,%rax; syscall (rt_sigreturn), spelled out so the encoding is fixed */
	.byte	0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05
	hlt
	.size	uw_restorer, .-uw_restorer
	.section	.note.GNU-stack,"",@progbits
