// workers.c: a multi-threaded C program (a work queue under a mutex, threads
// that come and go), debugged through sonde dap by
// testdata/dapclient/realprog.js: pause, threads appearing and exiting, a data
// breakpoint on a shared counter, a SIGSEGV in a worker (and its core).
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct job {
	int id;
	char tag[12];
	struct {
		int lo, hi;
	} range;
	long result;
};

struct queue {
	pthread_mutex_t mu;
	struct job jobs[16];
	int next, count;
};

static struct queue q = {PTHREAD_MUTEX_INITIALIZER};
volatile long g_done = 0;
static volatile int g_spin = 1;

static long work(struct job *j) {
	long acc = 0;
	for (int i = j->range.lo; i < j->range.hi; i++)
		acc += (long)i * i; // @WORK
	return acc;
}

static void *worker(void *arg) {
	int me = (int)(long)arg;
	for (;;) {
		pthread_mutex_lock(&q.mu);
		if (q.next >= q.count) {
			pthread_mutex_unlock(&q.mu);
			break;
		}
		struct job *j = &q.jobs[q.next++];
		pthread_mutex_unlock(&q.mu);
		j->result = work(j);
		__atomic_add_fetch(&g_done, 1, __ATOMIC_SEQ_CST); // @DONE_INC
	}
	if (me == 99) {
		int *p = (int *)(long)me;
		*p = 1; // @WORKER_CRASH
	}
	return NULL;
}

static void *spinner(void *arg) {
	(void)arg;
	while (g_spin)
		usleep(1000); // @SPIN
	return NULL;
}

int main(int argc, char **argv) {
	int nthreads = 3;
	int crash = argc > 1 && strcmp(argv[1], "crash") == 0;
	int forever = argc > 1 && strcmp(argv[1], "forever") == 0;
	for (int i = 0; i < 12; i++) {
		struct job *j = &q.jobs[q.count++];
		j->id = i;
		snprintf(j->tag, sizeof j->tag, "job-%d", i);
		j->range.lo = i * 100;
		j->range.hi = i * 100 + 50;
	}
	pthread_t spin;
	pthread_create(&spin, NULL, spinner, NULL);
	pthread_t t[4];
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(long)(crash && i == 1 ? 99 : i)); // @CREATE
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	printf("done %ld\n", g_done); // @JOINED
	fflush(stdout);
	if (forever)
		for (;;)
			pause();
	g_spin = 0;
	pthread_join(spin, NULL);
	long total = 0;
	for (int i = 0; i < q.count; i++)
		total += q.jobs[i].result;
	printf("total %ld\n", total); // @TOTAL
	return 0;
}
