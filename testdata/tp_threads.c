/* tp_threads: threads blocked in different calls, for attach, suspend and regs.
 *
 *   tp_threads          main in pause(); 4 threads in nanosleep, read, poll and
 *                       pthread_cond_wait
 *   tp_threads N        additionally N threads that loop in short sleeps
 *   tp_threads churn    additionally one thread that keeps creating short-lived
 *                       threads (for attaching while threads come and go)
 *
 * Prints "ready <pid>" once every thread has started. */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int pipefd[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t started;

static void *sleeper(void *arg) {
	(void)arg;
	pthread_barrier_wait(&started);
	for (;;) {
		struct timespec ts = {1000, 0};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void *reader(void *arg) {
	char c;
	(void)arg;
	pthread_barrier_wait(&started);
	for (;;)
		if (read(pipefd[0], &c, 1) <= 0)
			break;
	return NULL;
}

static void *poller(void *arg) {
	struct pollfd p = {pipefd[0], POLLPRI, 0};
	(void)arg;
	pthread_barrier_wait(&started);
	for (;;)
		poll(&p, 1, -1);
	return NULL;
}

static void *waiter(void *arg) {
	(void)arg;
	pthread_barrier_wait(&started);
	pthread_mutex_lock(&mu);
	for (;;)
		pthread_cond_wait(&cv, &mu);
	return NULL;
}

static void *busy(void *arg) {
	(void)arg;
	pthread_barrier_wait(&started);
	for (;;) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void *shortlived(void *arg) {
	(void)arg;
	return NULL;
}

static void *churner(void *arg) {
	(void)arg;
	pthread_barrier_wait(&started);
	for (;;) {
		pthread_t t;
		if (pthread_create(&t, NULL, shortlived, NULL) == 0)
			pthread_join(t, NULL);
	}
	return NULL;
}

int main(int argc, char **argv) {
	int churn = argc > 1 && argv[1][0] == 'c';
	int extra = argc > 1 && !churn ? atoi(argv[1]) : 0;
	void *(*fns[])(void *) = {sleeper, reader, poller, waiter};
	pthread_t t;
	if (pipe(pipefd) != 0)
		return 1;
	pthread_barrier_init(&started, NULL, 4 + extra + churn + 1);
	if (churn)
		pthread_create(&t, NULL, churner, NULL);
	for (int i = 0; i < 4; i++)
		pthread_create(&t, NULL, fns[i], NULL);
	for (int i = 0; i < extra; i++)
		pthread_create(&t, NULL, busy, NULL);
	pthread_barrier_wait(&started);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
