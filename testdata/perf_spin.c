/* A CPU-bound program for recording with perf and reading the recording
 * back (perfdata, sonde perf): a recursion, an inlined helper, and with a
 * second argument a fork, so the recording has FORK records and two
 * processes sharing their mappings. With "rounds N" it does fixed work
 * instead and prints its own CPU seconds (bench/perf/profile-cost.sh).
 *   perf_spin [MILLISECONDS [fork]]
 *   perf_spin rounds N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int fixed_work(long rounds) {
	volatile unsigned sink = 0;
	for (long i = 0; i < rounds; i++)
		sink += middle(sink, 5);
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	printf("%.4f\n", ts.tv_sec + ts.tv_nsec / 1e9);
	return 0;
}

int main(int argc, char **argv) {
	if (argc > 2 && strcmp(argv[1], "rounds") == 0)
		return fixed_work(atol(argv[2]));
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
