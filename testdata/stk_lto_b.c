/* stk_lto_b.c: see stk_lto_a.c. f stays live across the call (a
   callee-saved register), so the frame shows it. */
int __attribute__((noipa)) run(int (*f)(int), int x) {
	int r = f(x);
	return r + (f == 0);
}
