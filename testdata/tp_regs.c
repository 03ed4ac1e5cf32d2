/* tp_regs: known register values for register read and write tests.
 *
 * marker() is where the test stops the program: before calling it, main loads
 * r12 = 0x1122334455667788, xmm1 = bytes 0x10..0x1f, ymm2's upper half = 0x20..0x2f
 * (with AVX) and k1 = 0x5a5a (with AVX-512F). After marker() returns, it stores
 * r13 and xmm3 into `out_r13` and `out_xmm3` (a test writes them at the stop) and
 * calls done_marker() so that a test can read them, and exits 0. */
#include <stdint.h>
#include <string.h>

volatile uint64_t out_r13;
unsigned char out_xmm3[16];
unsigned char pattern[64];

__attribute__((noinline)) void marker(void) { __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) void done_marker(void) { __asm__ volatile("" ::: "memory"); }

int main(void) {
	for (int i = 0; i < 64; i++)
		pattern[i] = 0x10 + i;
	__builtin_cpu_init();
	int avx = __builtin_cpu_supports("avx");
	int avx512 = __builtin_cpu_supports("avx512f");
	uint64_t r13;
	__asm__ volatile("movdqu pattern(%%rip), %%xmm1\n" ::: "xmm1");
	if (avx)
		__asm__ volatile("vmovdqu pattern(%%rip), %%ymm2\n" ::: "xmm2");
	if (avx512)
		__asm__ volatile("mov $0x5a5a, %%eax\n kmovw %%eax, %%k1\n" ::: "rax");
	__asm__ volatile(
		"mov $0x1122334455667788, %%r12\n"
		"xor %%r13, %%r13\n"
		"pxor %%xmm3, %%xmm3\n"
		"call marker\n"
		"mov %%r13, %0\n"
		"movdqu %%xmm3, out_xmm3(%%rip)\n"
		: "=r"(r13)
		:
		: "r12", "r13", "xmm3", "memory", "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11");
	out_r13 = r13;
	done_marker();
	return 0;
}
