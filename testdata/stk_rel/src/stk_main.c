/* Test program for `sonde stack` file names: built from its directory with
 * relative paths (gcc -g -Iinclude src/stk_main.c), so gdb prints
 * "src/stk_main.c" and "include/stk_inc.h", not absolute paths. Prints
 * "ready" and blocks in an inlined chain. */
#include <stdio.h>
#include "stk_inc.h"
#include "stk_local.h"

__attribute__((noinline)) void f(void) {
	printf("ready\n");
	fflush(stdout);
	local_block();
}

int main(void) {
	f();
	return 0;
}
