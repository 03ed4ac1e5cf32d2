/* Two threads that name themselves (pthread_setname_np) and spin with the
 * main thread for MILLISECONDS (default 300): sonde perf must name each
 * sample by its thread, as perf does. Recorded by profiling's tests. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double ms = 300;

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned spin(void) {
	volatile unsigned x = 0;
	double end = now() + ms / 1000;
	while (now() < end)
		for (int i = 0; i < 10000; i++)
			x += i;
	return x;
}

static void *worker(void *arg) {
	char name[16];
	snprintf(name, sizeof name, "worker-%ld", (long)arg);
	pthread_setname_np(pthread_self(), name);
	return (void *)(long)spin();
}

int main(int argc, char **argv) {
	if (argc > 1)
		ms = atof(argv[1]);
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	spin();
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return 0;
}
