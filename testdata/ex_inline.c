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

/* Pointers to locals that live in registers: at -O2 p and q are
 * DW_OP_implicit_pointer (gdb: <synthetic pointer>), yet *p and q->b have
 * values. */
__attribute__((noinline)) int leaf2(int v)
{
	sink = v;
	return v + 1;
}

struct pair {
	int a, b;
};

static inline __attribute__((always_inline)) int get(int *p, struct pair *q)
{
	int r = leaf2(*p + q->b);
	return r + *p + q->a;
}

__attribute__((noinline)) int pointers(int x)
{
	int local = x * 2;
	struct pair pr = { x, x + 5 };
	return get(&local, &pr);
}

int main(int argc, char **argv)
{
	(void)argv;
	printf("%d %d\n", outer(argc + 1), pointers(argc + 1));
	return 0;
}
