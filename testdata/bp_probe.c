/* bp_probe: a function called in a tight loop, for conditional breakpoints
 * planted as fast probes (tcf/services, translate/probes/ccond).
 *
 *   bp_probe N   calls work(i, 7*i) and twice(i) for i in [0, N) and prints
 *                the total.
 *
 * work's parameters are in registers at its entry at -O2 and in the frame
 * (frame base: the CFA) after its prologue at -O0; gate and small are
 * globals (8 and 2 bytes). */
#include <stdio.h>
#include <stdlib.h>

int gate = 3;
short small = -2;
volatile long total;

__attribute__((noinline)) long work(int i, long k) {
	total += i ^ k;
	return total;
}

__attribute__((noinline)) long twice(int i) {
	total += 2L * i;
	return total;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	for (int i = 0; i < n; i++) {
		work(i, 7L * i);
		twice(i);
	}
	printf("total=%ld\n", (long)total);
	return 0;
}
