/* Vectorisable loops for the disasm package: built with -O3 -mavx2 so gcc emits
 * VEX-encoded AVX2 code and vzeroupper before returns and calls. */
#include <stdio.h>

#define N 1024
float a[N], b[N], c[N];
int ia[N], ib[N];

__attribute__((noinline)) void saxpy(float k) {
	for (int i = 0; i < N; i++)
		c[i] = k * a[i] + b[i];
}

__attribute__((noinline)) long isum(void) {
	long s = 0;
	for (int i = 0; i < N; i++)
		s += ia[i] * ib[i];
	return s;
}

__attribute__((noinline)) void clamp(int lo, int hi) {
	for (int i = 0; i < N; i++)
		ia[i] = ia[i] < lo ? lo : ia[i] > hi ? hi : ia[i];
}

int main(void) {
	for (int i = 0; i < N; i++) {
		a[i] = (float)i;
		b[i] = 2.0f * i;
		ia[i] = i - 100;
		ib[i] = 3 * i;
	}
	saxpy(0.5f);
	clamp(-10, 500);
	printf("%f %ld\n", c[N - 1], isum());
	return 0;
}
