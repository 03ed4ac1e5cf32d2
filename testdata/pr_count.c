/* pr_count: targets for fast-probe tests (translate/probes, sonde trace).
 *
 *   pr_count N        calls each probed function N times and prints one line
 *                     of results, the same with and without probes.
 *   pr_count N _exit  then ends with _exit(3) from a SIGUSR1 handler.
 *   pr_count N lib    also calls libc's snprintf N times (a probe in a library).
 *
 * hot        a short leaf at -O2: the jump covers its whole body (lea; ret).
 * ripload    starts with a rip-relative load (relocated into the trampoline).
 * tiny       is a lone ret: too short for a 5-byte jump (falls back).
 * bt_start   a loop whose head is 2 bytes after the entry: a branch target
 *            inside the patched range (falls back).
 * bt_label   an asm label (no type, no size) inside bt_start's body.
 * withcall   starts with a call rel32 (the copy pushes the application's
 *            return address).
 * jcc_fn     test; je rel8 out of the patched range (re-encoded as rel32). */
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

volatile long gvar = 7;

__attribute__((noinline)) long hot(long x) { return x * 3 + 1; }

__attribute__((noinline)) long ripload(long x) { return gvar + x; }

__attribute__((noinline)) void tiny(void) { __asm__ volatile(""); }

long bt_start(long n);
__asm__(".text\n"
        ".globl bt_start\n"
        ".type bt_start, @function\n"
        "bt_start:\n"
        "  xor %eax, %eax\n"
        "1:\n"
        "  add %rdi, %rax\n"
        ".globl bt_label\n"
        "bt_label:\n"
        "  dec %rdi\n"
        "  jnz 1b\n"
        "  ret\n"
        ".size bt_start, .-bt_start\n");

__attribute__((noinline)) long leaf2(long x) { return x ^ 0x55; }

long withcall(long x);
__asm__(".text\n"
        ".globl withcall\n"
        ".type withcall, @function\n"
        "withcall:\n"
        "  call leaf2\n"
        "  add $1, %rax\n"
        "  ret\n"
        ".size withcall, .-withcall\n");

long jcc_fn(long x);
__asm__(".text\n"
        ".globl jcc_fn\n"
        ".type jcc_fn, @function\n"
        "jcc_fn:\n"
        "  test %rdi, %rdi\n"
        "  je 1f\n"
        "  lea 1(%rdi), %rax\n"
        "  ret\n"
        "1:\n"
        "  mov $42, %eax\n"
        "  ret\n"
        ".size jcc_fn, .-jcc_fn\n");

static void bye(int sig) {
	(void)sig;
	_exit(3);
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1000;
	long sum = 0, r = 0, b = 0, w = 0, j = 0;
	int lib = argc > 2 && strcmp(argv[2], "lib") == 0;
	char buf[32];
	for (long i = 0; i < n; i++) {
		sum += hot(i);
		r += ripload(i);
		tiny();
		b += bt_start(3);
		w += withcall(i);
		j += jcc_fn(i & 1);
		if (lib)
			j += snprintf(buf, sizeof buf, "%ld", i);
	}
	printf("sum=%ld rip=%ld bt=%ld call=%ld jcc=%ld\n", sum, r, b, w, j);
	if (argc > 2 && strcmp(argv[2], "_exit") == 0) {
		fflush(stdout);
		signal(SIGUSR1, bye);
		raise(SIGUSR1);
	}
	return 0;
}
