/* Test program for `sonde stack` (cmd/sonde): threads blocked in libc and
 * stacks worth comparing with gdb, chosen by argv[1]. It prints "ready" once
 * the interesting state is set up, then blocks forever (tests attach to it,
 * or dump a core of it).
 *
 *   threads N   N worker threads blocked in nanosleep, futex (condition
 *               variable), read, poll, sigwait, select, in turn; main in pause
 *   deep N      N-deep recursion, then pause
 *   signal      a SIGUSR1 handler (sent by the program to itself) blocks
 *   altstack    the same handler on a sigaltstack
 *   qsort       a qsort comparison callback blocks inside libc's qsort
 *   inline      blocks under functions inlined into each other (-O2)
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

static int pipefd[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t started;

NOINLINE void block_forever(void) {
	for (;;)
		pause();
}

NOINLINE void in_sleep(void) {
	struct timespec ts = {1000, 0};
	for (;;)
		nanosleep(&ts, NULL);
}

NOINLINE void in_futex(void) {
	pthread_mutex_lock(&mu);
	for (;;)
		pthread_cond_wait(&cv, &mu);
}

NOINLINE void in_read(void) {
	char c;
	for (;;)
		read(pipefd[0], &c, 1);
}

NOINLINE void in_poll(void) {
	struct pollfd p = {pipefd[0], POLLIN, 0};
	for (;;)
		poll(&p, 1, -1);
}

NOINLINE void in_sigwait(void) {
	sigset_t set;
	int sig;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	for (;;)
		sigwait(&set, &sig);
}

NOINLINE void in_select(void) {
	for (;;) {
		fd_set r;
		FD_ZERO(&r);
		FD_SET(pipefd[0], &r);
		select(pipefd[0] + 1, &r, NULL, NULL, NULL);
	}
}

static void (*const blockers[])(void) = {in_sleep, in_futex, in_read, in_poll, in_sigwait, in_select};

NOINLINE void *worker(void *arg) {
	long i = (long)arg;
	pthread_barrier_wait(&started);
	blockers[i % (sizeof blockers / sizeof blockers[0])]();
	return NULL;
}

NOINLINE int deep(int n) {
	if (n == 0) {
		printf("ready\n");
		fflush(stdout);
		block_forever();
	}
	int r = deep(n - 1) + 1;
	BARRIER();
	return r;
}

NOINLINE void in_handler_call(void) { in_sleep(); }

static void handler(int sig) {
	(void)sig;
	printf("ready\n");
	fflush(stdout);
	in_handler_call();
}

NOINLINE void do_signal(int alt) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	if (alt) {
		stack_t ss = {.ss_sp = malloc(1 << 16), .ss_size = 1 << 16};
		sigaltstack(&ss, NULL);
		sa.sa_flags = SA_ONSTACK;
	}
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
}

NOINLINE int compare(const void *a, const void *b) {
	static int once;
	if (!once) {
		once = 1;
		printf("ready\n");
		fflush(stdout);
		in_sleep();
	}
	return *(const int *)a - *(const int *)b;
}

NOINLINE void do_qsort(void) {
	int v[] = {5, 3, 9, 1, 7, 2};
	qsort(v, 6, sizeof v[0], compare);
}

static inline __attribute__((always_inline)) void inner_inline(int x) {
	if (x > 0) {
		printf("ready\n");
		fflush(stdout);
	}
	block_forever();
}

static inline __attribute__((always_inline)) void outer_inline(int x) {
	inner_inline(x + 1);
	BARRIER();
}

NOINLINE void do_inline(int x) {
	outer_inline(x);
	BARRIER();
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "threads";
	int n = argc > 2 ? atoi(argv[2]) : 6;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (pipe(pipefd) != 0)
		return 1;
	if (!strcmp(mode, "threads")) {
		pthread_barrier_init(&started, NULL, n + 1);
		for (long i = 0; i < n; i++) {
			pthread_t t;
			pthread_create(&t, NULL, worker, (void *)i);
		}
		pthread_barrier_wait(&started);
		printf("ready\n");
		fflush(stdout);
		block_forever();
	} else if (!strcmp(mode, "deep"))
		deep(n);
	else if (!strcmp(mode, "signal"))
		do_signal(0);
	else if (!strcmp(mode, "altstack"))
		do_signal(1);
	else if (!strcmp(mode, "qsort"))
		do_qsort();
	else if (!strcmp(mode, "inline"))
		do_inline(n);
	return 0;
}
