/* Test program for the unwinder (package unwind): it builds an interesting
 * stack, chosen by argv[1], and stops itself with raise(SIGTRAP) so that a
 * tracer (the test, or gdb) can compare backtraces at the same stop. */
#define _GNU_SOURCE
#include <alloca.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
/* Keeps calls from becoming tail calls. */
#define BARRIER() __asm__ volatile("" ::: "memory")

volatile int sink;

NOINLINE void stop_here(void) {
	raise(SIGTRAP);
	BARRIER();
}

NOINLINE int recurse(int n) {
	if (n == 0) {
		stop_here();
		return 0;
	}
	int r = recurse(n - 1) + 1;
	BARRIER();
	return r;
}

/* qsort calls back into us from libc. */
static int stopped_in_compare;
NOINLINE int compare(const void *a, const void *b) {
	if (!stopped_in_compare) {
		stopped_in_compare = 1;
		stop_here();
	}
	return *(const int *)a - *(const int *)b;
}

NOINLINE void do_qsort(void) {
	int v[] = {5, 3, 9, 1, 7, 2};
	qsort(v, 6, sizeof v[0], compare);
	sink = v[0];
}

NOINLINE void in_handler(int sig) {
	sink = sig;
	stop_here();
	BARRIER();
}

void handler(int sig) {
	in_handler(sig);
	BARRIER();
}

NOINLINE void interrupted(void) {
	raise(SIGUSR1);
	BARRIER();
}

NOINLINE void do_signal(int altstack) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	if (altstack) {
		stack_t ss;
		ss.ss_sp = malloc(1 << 16);
		ss.ss_size = 1 << 16;
		ss.ss_flags = 0;
		sigaltstack(&ss, NULL);
		sa.sa_flags = SA_ONSTACK;
	}
	sigaction(SIGUSR1, &sa, NULL);
	interrupted();
	BARRIER();
}

NOINLINE void use_alloca(int n) {
	char *p = alloca(n);
	char vla[n + 16];
	memset(p, 1, n);
	memset(vla, 2, sizeof vla);
	sink = p[n - 1] + vla[3];
	stop_here();
	sink += p[0] + vla[n];
}

/* A 32-byte-aligned local together with a VLA makes GCC realign the stack
 * through a DRAP register: the CFA becomes DW_CFA_def_cfa_expression
 * (breg6 -8; deref) and rbp/rbx get DW_CFA_expression rules. */
NOINLINE void realigned(int n) {
	int v[8] __attribute__((aligned(32)));
	char vla[n + 1];
	memset(vla, 1, n + 1);
	for (int i = 0; i < 8; i++)
		v[i] = n + i;
	__asm__ volatile("" : : "r"(v), "r"(vla) : "memory");
	stop_here();
	sink = v[n & 7] + vla[0];
}

/* uw_asm.S: a function whose CFA is a hand-written .cfi_escape expression. */
void uw_asm_call(void (*fn)(void));
#ifndef NO_ASM
#include <sys/syscall.h>
/* uw_asm.S: a sigreturn trampoline without CFI, installed with the raw
 * rt_sigaction system call (SA_RESTORER), as libcs other than glibc do. */
void uw_restorer(void);
struct kernel_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	unsigned long mask;
};

NOINLINE void do_own_restorer(void) {
	struct kernel_sigaction ksa = {handler, 0x04000000 /* SA_RESTORER */, uw_restorer, 0};
	if (syscall(SYS_rt_sigaction, SIGUSR1, &ksa, NULL, 8) != 0)
		exit(3);
	interrupted();
	BARRIER();
}

NOINLINE void asm_callback(void) {
	stop_here();
	BARRIER();
}
#endif

static pthread_barrier_t ready;
static int pipefd[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

NOINLINE void *sleeper(void *arg) {
	pthread_barrier_wait(&ready);
	struct timespec ts = {1000, 0};
	nanosleep(&ts, NULL);
	return arg;
}

NOINLINE void *waiter(void *arg) {
	pthread_mutex_lock(&mu);
	pthread_barrier_wait(&ready);
	pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return arg;
}

NOINLINE void *reader(void *arg) {
	char c;
	pthread_barrier_wait(&ready);
	sink = read(pipefd[0], &c, 1);
	return arg;
}

NOINLINE void do_threads(void) {
	pthread_t t[3];
	if (pipe(pipefd) != 0)
		exit(2);
	pthread_barrier_init(&ready, NULL, 4);
	pthread_create(&t[0], NULL, sleeper, NULL);
	pthread_create(&t[1], NULL, waiter, NULL);
	pthread_create(&t[2], NULL, reader, NULL);
	pthread_barrier_wait(&ready);
	/* Give the threads time to block in the kernel. */
	struct timespec ts = {0, 50 * 1000 * 1000};
	nanosleep(&ts, NULL);
	stop_here();
	BARRIER();
}

/* For stops at asynchronous positions (the test sets breakpoints): a call
 * through the PLT into libc and a call into the vDSO. */
NOINLINE int callee(int x) {
	sink = x;
	return getppid() + x;
}

NOINLINE void do_calls(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	sink = callee(ts.tv_nsec & 1);
	BARRIER();
}

/* A noreturn call as the last instruction of a function. */
NOINLINE __attribute__((noreturn)) void die(void) {
	stop_here();
	exit(0);
}

NOINLINE void ends_in_noreturn(int x) {
	sink = x;
	die();
}

/* A sibling call: at -O2 tail_caller jumps to tail_target and leaves no
 * frame (gdb may show it as a tail-call frame from call-site DWARF). */
NOINLINE void tail_target(int x) {
	sink = x;
	stop_here();
	BARRIER();
}

NOINLINE void tail_caller(int x) {
	sink = x + 1;
	tail_target(x + 2);
}

/* A call through a null function pointer: pc 0 is in no module (the uwx
 * leaf rule: the return address is at [sp]). Stops with SIGSEGV. */
void (*volatile null_fn)(void);
NOINLINE void call_null(void) {
	null_fn();
	BARRIER();
}

/* The same null call with a SIGSEGV handler installed: the interrupted
 * frame has pc 0 and sits above the signal frame. */
NOINLINE void call_null_handled(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigaction(SIGSEGV, &sa, NULL);
	call_null();
	BARRIER();
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "recurse";
	int n = argc > 2 ? atoi(argv[2]) : 3;
	if (!strcmp(mode, "recurse"))
		recurse(n);
	else if (!strcmp(mode, "qsort"))
		do_qsort();
	else if (!strcmp(mode, "signal"))
		do_signal(0);
	else if (!strcmp(mode, "altstack"))
		do_signal(1);
	else if (!strcmp(mode, "alloca"))
		use_alloca(n * 100);
	else if (!strcmp(mode, "realign"))
		realigned(n);
#ifndef NO_ASM
	else if (!strcmp(mode, "asm"))
		uw_asm_call(asm_callback);
	else if (!strcmp(mode, "restorer"))
		do_own_restorer();
#endif
	else if (!strcmp(mode, "calls"))
		do_calls();
	else if (!strcmp(mode, "noreturn"))
		ends_in_noreturn(n);
	else if (!strcmp(mode, "tailcall"))
		tail_caller(n);
	else if (!strcmp(mode, "nullcall"))
		call_null();
	else if (!strcmp(mode, "nullcall-handled"))
		call_null_handled();
	else if (!strcmp(mode, "threads"))
		do_threads();
	else
		return 2;
	BARRIER();
	return 0;
}
