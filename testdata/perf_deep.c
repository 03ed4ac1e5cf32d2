/* A CPU-bound program whose hot loop runs ~25 KiB below main's frame: a
 * recursion of 24 frames holding 1 KiB each (sonde profile --stack-size: a
 * sample's stack copy of 8 KiB ends before main, one of 48 KiB reaches it).
 *   perf_deep [MILLISECONDS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned spin(unsigned x, double end) {
	while (now() < end)
		for (int i = 0; i < 100000; i++)
			x = x * 2654435761u ^ (x >> 13);
	return x;
}

__attribute__((noinline)) unsigned deep(int depth, unsigned x, double end) {
	volatile char pad[1024];
	pad[0] = (char)x;
	pad[sizeof pad - 1] = (char)(x >> 8);
	if (depth == 0)
		return spin(x, end);
	return deep(depth - 1, x + pad[0], end) + pad[sizeof pad - 1];
}

int main(int argc, char **argv) {
	double ms = argc > 1 ? atof(argv[1]) : 300;
	printf("%u\n", deep(24, 1, now() + ms / 1000));
	return 0;
}
