/* core_avx512: loads known values into AVX-512 registers (k1, zmm17) and the
 * upper half of ymm3, says "ready", and waits. Used to check that XSAVE images
 * are read at the right offsets on every CPU vendor. */
#include <stdio.h>
#include <unistd.h>

static const unsigned long long pattern[8] = {
	0x1111111111111111ULL, 0x2222222222222222ULL, 0x3333333333333333ULL, 0x4444444444444444ULL,
	0x5555555555555555ULL, 0x6666666666666666ULL, 0x7777777777777777ULL, 0x8888888888888888ULL,
};

int main(void) {
	unsigned long long k = 0xa5a5;
	__asm__ volatile(
		"kmovq %0, %%k1\n\t"
		"vmovdqu64 (%1), %%zmm17\n\t"
		"vmovdqu (%1), %%ymm3\n\t"
		:
		: "r"(k), "r"(pattern)
		: "xmm3", "xmm17");
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
