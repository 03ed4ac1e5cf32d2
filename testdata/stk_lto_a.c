/* stk_lto_a.c: with stk_lto_b.c, a static callback whose ELF symbol GCC's
   LTO partitioning renames (cb.lto_priv.0) passed to another unit. */
#include <stdio.h>
#include <unistd.h>
int run(int (*f)(int), int x);
static int __attribute__((noinline)) cb(int v) {
	pause();
	return v + 1;
}
int main(void) {
	printf("ready\n");
	fflush(stdout);
	return run(cb, 3);
}
