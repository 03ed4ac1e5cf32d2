/* dis_svc_prog: the debuggee of the Disassembly, DPrintf, Symbols.findFrameInfo
 * and Eclipse launch-sequence tests (tcf/services).
 *
 *   dis_svc_prog [N]   call dis_step(i, "loop") for i < N (default 3), print
 *                      "total T", exit 0
 *
 * dis_step calls dis_leaf (a direct call the listing names) and updates
 * globals through RIP-relative operands; dis_avx (never run: the CPU may lack
 * AVX) holds a vzeroupper, which some decoders mis-size.
 */
#include <stdio.h>
#include <stdlib.h>

volatile int dis_counter;
const char *dis_name = "sonde";
double dis_ratio = 2.5;

__attribute__((noinline)) int dis_leaf(int x) { return x * 3 + dis_counter; }

__attribute__((noinline)) void dis_avx(void) { __asm__ volatile("vzeroupper"); }

__attribute__((noinline)) int dis_step(int i, const char *tag) {
	int sq = i * i; /* DIS_STEP_LINE */
	dis_counter += dis_leaf(sq);
	return sq; /* DIS_STEP_RETURN */
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 3;
	int total = 0;
	if (argc > 5)
		dis_avx();
	for (int i = 0; i < n; i++)
		total += dis_step(i, "loop");
	printf("total %d\n", total);
	return 0;
}
