/* ex_many: a function with 50 locals of several types, for the
 * benchmark of reading every local of a frame. */
#include <stdio.h>

struct pair { int a, b; };
static const char *names[] = { "alpha", "beta", "gamma" };

__attribute__((noinline)) int stop_here(long n) { __asm__ volatile("" ::: "memory"); return (int)n; }

__attribute__((noinline)) int many(int seed)
{
	int v0 = seed + 0;
	double v1 = seed * 1.5;
	long v2 = (long)seed << 2;
	struct pair v3 = { seed, 3 };
	const char *v4 = names[4 % 3];
	int v5 = seed + 5;
	double v6 = seed * 6.5;
	long v7 = (long)seed << 7;
	struct pair v8 = { seed, 8 };
	const char *v9 = names[9 % 3];
	int v10 = seed + 10;
	double v11 = seed * 11.5;
	long v12 = (long)seed << 12;
	struct pair v13 = { seed, 13 };
	const char *v14 = names[14 % 3];
	int v15 = seed + 15;
	double v16 = seed * 16.5;
	long v17 = (long)seed << 17;
	struct pair v18 = { seed, 18 };
	const char *v19 = names[19 % 3];
	int v20 = seed + 20;
	double v21 = seed * 21.5;
	long v22 = (long)seed << 2;
	struct pair v23 = { seed, 23 };
	const char *v24 = names[24 % 3];
	int v25 = seed + 25;
	double v26 = seed * 26.5;
	long v27 = (long)seed << 7;
	struct pair v28 = { seed, 28 };
	const char *v29 = names[29 % 3];
	int v30 = seed + 30;
	double v31 = seed * 31.5;
	long v32 = (long)seed << 12;
	struct pair v33 = { seed, 33 };
	const char *v34 = names[34 % 3];
	int v35 = seed + 35;
	double v36 = seed * 36.5;
	long v37 = (long)seed << 17;
	struct pair v38 = { seed, 38 };
	const char *v39 = names[39 % 3];
	int v40 = seed + 40;
	double v41 = seed * 41.5;
	long v42 = (long)seed << 2;
	struct pair v43 = { seed, 43 };
	const char *v44 = names[44 % 3];
	int v45 = seed + 45;
	double v46 = seed * 46.5;
	long v47 = (long)seed << 7;
	struct pair v48 = { seed, 48 };
	const char *v49 = names[49 % 3];
	return stop_here((long)v0 + (long)v1 + (long)v2 + v3.a + (long)v4[0] + (long)v5 + (long)v6 + (long)v7 + v8.a + (long)v9[0] + (long)v10 + (long)v11 + (long)v12 + v13.a + (long)v14[0] + (long)v15 + (long)v16 + (long)v17 + v18.a + (long)v19[0] + (long)v20 + (long)v21 + (long)v22 + v23.a + (long)v24[0] + (long)v25 + (long)v26 + (long)v27 + v28.a + (long)v29[0] + (long)v30 + (long)v31 + (long)v32 + v33.a + (long)v34[0] + (long)v35 + (long)v36 + (long)v37 + v38.a + (long)v39[0] + (long)v40 + (long)v41 + (long)v42 + v43.a + (long)v44[0] + (long)v45 + (long)v46 + (long)v47 + v48.a + (long)v49[0]);
}

int main(int argc, char **argv)
{
	(void)argv;
	printf("%d\n", many(argc));
	return 0;
}
