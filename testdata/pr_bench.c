/* pr_bench: the per-call cost of a probe on a hot function.
 *
 *   pr_bench N   calls hot() N times in a timed loop and prints
 *                "ns=<loop thread-CPU ns> wall=<loop wall-clock ns> calls=N sum=...".
 * The thread's CPU clock leaves out time the VM gives to others (the fair
 * measure of code that runs in the program); the wall clock includes the time
 * the program waits stopped for a debugger (the cost of a trap). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) long hot(long x) { return x * 3 + 1; }

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	struct timespec a, b, wa, wb;
	long sum = 0;
	clock_gettime(CLOCK_MONOTONIC, &wa);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	for (long i = 0; i < n; i++)
		sum += hot(i);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	clock_gettime(CLOCK_MONOTONIC, &wb);
	long ns = (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec);
	long wall = (wb.tv_sec - wa.tv_sec) * 1000000000L + (wb.tv_nsec - wa.tv_nsec);
	printf("ns=%ld wall=%ld calls=%ld sum=%ld\n", ns, wall, n, sum);
	return 0;
}
