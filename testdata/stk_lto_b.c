/* stk_lto_b.c: see stk_lto_a.c. f and y stay live across the indirect
   call (callee-saved registers): the frame shows f, and the call site
   records y as cb's argument (cb's v@entry, which needs the call target:
   with clang, DW_AT_call_target is the register holding f). */
int __attribute__((noinline, noipa)) run(int (*f)(int), int x) {
	int y = x * 3;
	int r = f(y);
	return r + y + (f == 0);
}
