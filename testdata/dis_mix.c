/* Varied code for the disasm package's objdump comparison: calls, loops, a
 * switch (jump table), floating point, 64-bit arithmetic, atomics, string
 * operations and globals reached RIP-relative. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int counter;
static _Atomic long hits;
double weights[16] = {1.5, 2.5, 3.25};
const char *names[] = {"zero", "one", "two", "three", "four", "five", "six"};

__attribute__((noinline)) int leaf(int a, int b) { return a * b + counter; }

__attribute__((noinline)) const char *pick(int n) {
	switch (n) {
	case 0: return names[0];
	case 1: return names[1];
	case 2: return names[2];
	case 3: return names[3];
	case 4: return names[4];
	case 5: return names[5];
	default: return names[6];
	}
}

__attribute__((noinline)) double mean(const double *v, int n) {
	double s = 0;
	for (int i = 0; i < n; i++)
		s += v[i];
	return n ? s / n : 0.0;
}

__attribute__((noinline)) long long mix64(long long x, unsigned shift) {
	x ^= x >> (shift & 63);
	x *= 0x9E3779B97F4A7C15LL;
	return x / 7 + (x % 13);
}

__attribute__((noinline)) void bump(void) { atomic_fetch_add(&hits, 1); }

__attribute__((noinline)) float scale(float f, int i) { return f * (float)i / 3.0f; }

int main(int argc, char **argv) {
	char buf[64];
	memset(buf, 0, sizeof buf);
	strncpy(buf, argc > 1 ? argv[1] : "sonde", sizeof buf - 1);
	for (int i = 0; i < argc; i++) {
		counter += leaf(i, (int)strlen(buf));
		bump();
	}
	printf("%s %f %lld %f %ld\n", pick(argc), mean(weights, 16), mix64(argc, 7),
	       (double)scale(1.5f, argc), (long)hits);
	return counter > 1000 ? EXIT_FAILURE : EXIT_SUCCESS;
}
