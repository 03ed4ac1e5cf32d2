/* A function without CFI (as crtstuff's __do_global_dtors_aux, which
 * _dl_call_fini calls through `call *(%rbx)`) between a function with CFI
 * and its caller: the unwinder reaches main only through nocfi's frame
 * pointer, validating a return address that follows `call *(%reg)`.
 * With "unlink" it first removes its own file, as a program run from a
 * memfd or deleted while it runs: no tool can read it afterwards.
 * Usage: perf_nocfi MS [unlink] (spins about MS milliseconds). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;
static long budget_ns;

void spin(void)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 100000; i++)
			sink += i * 7;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < budget_ns);
}

/* nocfi keeps a frame pointer and has no .cfi directives. */
__asm__(".text\n"
	".globl nocfi\n"
	".type nocfi, @function\n"
	"nocfi:\n"
	"\tpush %rbp\n"
	"\tmov %rsp, %rbp\n"
	"\tcall spin\n"
	"\tpop %rbp\n"
	"\tret\n"
	".size nocfi, .-nocfi\n");
void nocfi(void);

void (*table[1])(void) = {nocfi};

/* call_through calls *slot with `call *(%reg)` (mod 00: two bytes). */
__attribute__((noinline)) int call_through(void (**slot)(void))
{
	__asm__ volatile("call *(%0)" : : "r"(slot) : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc");
	return (int)sink & 1;
}

int main(int argc, char **argv)
{
	budget_ns = (argc > 1 ? atol(argv[1]) : 300) * 1000000L;
	if (argc > 2 && strcmp(argv[2], "unlink") == 0 && unlink(argv[0]) != 0)
		return 2;
	return call_through(table) + 1 == 0;
}
