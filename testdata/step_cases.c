/* Test program for line stepping compared with gdb (tcf/services): a call
 * into code without line information, a one-line function, a call into the
 * C library through the PLT, and a signal handler. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* nolines has CFI but no line information (a section of its own, so no
 * line-table row of the C code covers it). */
int nolines(int x);
__asm__(".section .text.nolines,\"ax\",@progbits\n"
	".globl nolines\n"
	".type nolines,@function\n"
	"nolines:\n"
	".cfi_startproc\n"
	"push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp,-16\n"
	"mov %rsp,%rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"lea 1(%rdi),%eax\n"
	"pop %rbp\n"
	".cfi_def_cfa %rsp,8\n"
	"ret\n"
	".cfi_endproc\n"
	".size nolines,.-nolines\n"
	".text\n");

static volatile int g = 1;
static volatile sig_atomic_t ticks;
static volatile long sent;

__attribute__((noinline)) int one_line(int x) { return x + g; } /* STEP_ONE_LINE */

static void on_signal(int sig) {
	(void)sig;
	ticks++; /* STEP_HANDLER_LINE */
}

__attribute__((noinline)) int start_here(int x) {
	int a = nolines(x); /* STEP_NOLINES_LINE */
	int b = one_line(a); /* STEP_CALL_ONE_LINE */
	return a + b;
}

/* Sends this thread SIGUSR1 with a system call made here, so that the signal
 * interrupts the program at a known instruction (the one after the syscall)
 * and every run steps alike. */
__attribute__((noinline)) void signal_self(void) {
	long pid = getpid(), tid = syscall(SYS_gettid), ret;
	__asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_tgkill), "D"(pid), "S"(tid), "d"((long)SIGUSR1) : "rcx", "r11", "memory"); /* STEP_SIGNAL_LINE */
	sent += ret == 0; /* STEP_AFTER_SIGNAL_LINE */
}

int main(void) {
	int r = start_here(1);
	r += atoi("0"); /* STEP_LIBC_LINE */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, 0);
	signal_self();
	return r == 5 && ticks == 1 && sent == 1 ? 0 : 1;
}
