/* Churns threads: the main thread creates and joins short-lived threads in
   a loop, so a stop finds it (or a new thread) inside clone3 now and then.
   Usage: stk_churn [N] (N threads, default: forever) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *noop(void *arg)
{
	return arg;
}

__attribute__((noinline)) static void spawn(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, noop, NULL) == 0)
		pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : -1;
	for (long i = 0; n < 0 || i < n; i++)
		spawn();
	return 0;
}
