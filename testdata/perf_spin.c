/* A CPU-bound program for recording with perf and reading the recording
 * back (perfdata, sonde perf): a recursion, an inlined helper, and with a
 * second argument a fork, so the recording has FORK records and two
 * processes sharing their mappings.
 *   perf_spin [MILLISECONDS [fork]] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
	double ms = argc > 1 ? atof(argv[1]) : 300;
	pid_t child = argc > 2 ? fork() : -1;
	volatile unsigned sink = 0;
	double end = now() + ms / 1000;
	while (now() < end)
		sink += middle(sink, 5);
	if (child == 0)
		_exit(0);
	if (child > 0)
		waitpid(child, NULL, 0);
	printf("%u\n", sink);
	return 0;
}
