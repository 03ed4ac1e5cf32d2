/* tp_hotloop: a hot loop for breakpoint and watchpoint tests.
 *
 *   tp_hotloop [N [T]]  calls tick() N times (forever if N is 0 or missing) from
 *                       T threads (1 if missing), then exits 0. tick() reads and
 *                       writes the global `watched`; `reader_only` is only read.
 *   tp_hotloop late     one thread ticks 1000 times after a 200 ms pause, from a
 *                       thread created after that pause (threads created later).
 *
 * tick() is compiled without optimisation, so it starts with push %rbp (or
 * endbr64 when the compiler adds CET), the usual function entry. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

volatile long watched;
volatile long reader_only = 42;
volatile long sink;
static long iterations;

__attribute__((noinline, optimize("O0"))) void tick(void) {
	watched = watched + 1;
	sink = reader_only;
}

/* other_entry starts with an instruction the emulator does not know (a mov of
 * memory), so a breakpoint on it is stepped over with the breakpoint lifted. */
__attribute__((noinline)) long other_entry(void) { return reader_only + 1; }

static void *worker(void *arg) {
	(void)arg;
	for (long i = 0; iterations == 0 || i < iterations; i++) {
		tick();
		sink = other_entry();
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "late") == 0) {
		struct timespec ts = {0, 200000000};
		nanosleep(&ts, NULL);
		iterations = 1000;
		pthread_t t;
		pthread_create(&t, NULL, worker, NULL);
		pthread_join(t, NULL);
		return 0;
	}
	iterations = argc > 1 ? atol(argv[1]) : 0;
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	pthread_t t[64];
	if (threads < 1 || threads > 64)
		threads = 1;
	for (int i = 1; i < threads; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	worker(NULL);
	for (int i = 1; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
