/* svc_target: a small program for the TCF services tests. It starts a worker
 * thread, sets a recognisable global, prints "ready <addr of global>" and waits
 * in a call chain main -> wait_here -> pause. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

volatile unsigned long long svc_global = 0x1122334455667788ULL;

static void *worker(void *arg) {
	(void)arg;
	for (;;)
		sleep(100);
	return 0;
}

__attribute__((noinline)) void wait_here(void) {
	printf("ready %p\n", (void *)&svc_global);
	fflush(stdout);
	for (;;)
		pause();
}

int main(void) {
	pthread_t t;
	pthread_create(&t, 0, worker, 0);
	usleep(20000);
	wait_here();
	return 0;
}
