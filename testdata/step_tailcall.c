/* step_tailcall: line steps through a tail call at -O2, compared with gdb's
 * step, next and finish (dap tests): mid ends in a jump to leaf, so leaf
 * returns straight into main. gdb's next from mid's last line stops in
 * leaf (a jump is not a call it steps over), and its next from leaf's
 * last line finishes main's line the return lands in. */
#include <stdio.h>

volatile int sink;

__attribute__((noinline)) int leaf(int x)
{
	sink = x;
	return x + 1;
}

__attribute__((noinline)) int mid(int x)
{
	sink = 2;
	return leaf(x * 2);
}

int main(int argc, char **argv)
{
	(void)argv;
	int r = mid(argc);
	printf("%d\n", r);
	return r == 5;
}
