/* dap_deep: a recursion deeper than the unwinder's depth limit (4096
 * frames), stopped at its bottom, for dap's TestStackDepthLimit. */
#include <stdio.h>

volatile int sink;

__attribute__((noinline)) int bottom(int n)
{
	sink = n;
	return n;
}

__attribute__((noinline)) int down(int n)
{
	if (n == 0)
		return bottom(n);
	return down(n - 1) + 1;
}

int main(void)
{
	printf("%d\n", down(5000));
	return 0;
}
