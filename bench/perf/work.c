/* Fixed work for measuring what sampling costs a program: N rounds of the
 * same recursion and loop as testdata/perf_spin.c, then the process's own CPU
 * time on stdout (seconds).   work [ROUNDS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline __attribute__((always_inline)) unsigned mix(unsigned x) {
	return x * 2654435761u ^ (x >> 13);
}

__attribute__((noinline)) unsigned leaf(unsigned x, int n) {
	for (int i = 0; i < n; i++)
		x = mix(x + i);
	return x;
}

__attribute__((noinline)) unsigned middle(unsigned x, int depth) {
	if (depth == 0)
		return leaf(x, 1000);
	return middle(x + 1, depth - 1) + 1;
}

int main(int argc, char **argv) {
	long rounds = argc > 1 ? atol(argv[1]) : 2000000;
	volatile unsigned sink = 0;
	for (long i = 0; i < rounds; i++)
		sink += middle(sink, 5);
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	printf("%.4f\n", ts.tv_sec + ts.tv_nsec / 1e9);
	return 0;
}
