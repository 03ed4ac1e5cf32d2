/* step_inline: line steps through functions inlined at -O2, compared with
 * gdb's step and next (dap tests): an inlined call on a line of its own,
 * nested inlined calls, and an inlined call that is the argument of a
 * real one. */
#include <stdio.h>

volatile int sink;

__attribute__((noinline)) int leaf(int v)
{
	sink = v;
	return v * 2;
}

static inline __attribute__((always_inline)) int inner(int x)
{
	sink = x;
	return leaf(x + 1);
}

static inline __attribute__((always_inline)) int outer(int x)
{
	int r = inner(x * 3);
	return r + 1;
}

__attribute__((noinline)) int run(int n)
{
	int t = 0;
	t += outer(n);
	sink = t;
	t += leaf(inner(n));
	return t;
}

int main(int argc, char **argv)
{
	(void)argv;
	printf("%d\n", run(argc + 1));
	return 0;
}
