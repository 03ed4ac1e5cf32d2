/* ex_inline: locals of inlined frames. leaf is called from middle, which
 * is always inlined into outer: a stop in leaf shows frames leaf, middle
 * (inlined), outer, main, and each must see its own variables. */
#include <stdio.h>

volatile int sink;

__attribute__((noinline)) int leaf(int v)
{
	sink = v;
	return v * 2;
}

static inline __attribute__((always_inline)) int middle(int x)
{
	int m = x * 3;
	int r = leaf(m + 1);
	return r + m;
}

__attribute__((noinline)) int outer(int y)
{
	int o = y + 100;
	int res = middle(o);
	return res - o;
}

int main(int argc, char **argv)
{
	(void)argv;
	printf("%d\n", outer(argc + 1));
	return 0;
}
